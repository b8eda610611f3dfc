# Sourced by the scripts that run a host-reference study for results/
# (run_reference_masked_study.sh, run_segment_floor.sh): study_log_header
# prints the log's first lines (UTC time, the commit and whether the tree
# is modified, the CPU, uptime before the runs).
study_log_header() {
  echo "# $(date -u +%FT%TZ) commit $(git rev-parse --short=12 HEAD)$(git diff --quiet HEAD || echo ' (dirty)')"
  echo "# $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-), $(nproc) cores"
  echo "# uptime before: $(uptime)"
}
