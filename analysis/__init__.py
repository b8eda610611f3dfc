"""Analysis of mosaic_miniapp result files (docs/result.schema.json).

Commands (each has --help):

    python3 -m analysis.collect    FILES...  # one table of every run (CSV + Markdown)
    python3 -m analysis.scaling    FILES...  # strong/weak scaling tables, plots, checksum agreement
    python3 -m analysis.sweep      FILES...  # throughput vs d, vs r, vs streams per rank
    python3 -m analysis.stability  FILES...  # diagnostics time series vs step
    python3 -m analysis.accuracy   FILES...  # accuracy map: distance vs eta_U, best accuracy vs d
    python3 -m analysis.breakdown  FILES...  # wall time per phase of every run (stacked bars)

Reading a run's final-state files (output.state_dir), checked against their
manifest states.json: analysis.states.load_states(DIR).

Only the Python standard library, numpy and matplotlib (Agg) are used;
matplotlib and numpy only where a figure is drawn or a state set read (a
missing one: exit status 2 with the remedy), so tables work without them.
"""
