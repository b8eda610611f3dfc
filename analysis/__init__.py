"""Analysis of mosaic_miniapp result files (docs/result.schema.json).

Commands (each has --help):

    python3 -m analysis.collect    FILES...  # one table of every run (CSV + Markdown)
    python3 -m analysis.scaling    FILES...  # strong/weak scaling tables, plots, checksum agreement
    python3 -m analysis.sweep      FILES...  # throughput vs d, vs r, vs streams per rank
    python3 -m analysis.stability  FILES...  # diagnostics time series vs step

Reading a run's final-state files (output.state_dir), checked against their
manifest states.json: analysis.states.load_states(DIR).

Only the Python standard library, numpy and matplotlib (Agg) are used.
"""
