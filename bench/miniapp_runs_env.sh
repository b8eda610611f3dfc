# Sourced by the scripts that run the mini-app for results/ (run_accuracy_runs.sh,
# run_missing_study.sh, run_pm10.sh): M, the binary (MOSAIC_MINIAPP=path runs
# another, e.g. one built from an earlier commit); commit, the commit that
# binary was built from (its --version, "-dirty" for a modified tree); two
# OpenMP threads placed by the OS; mpi_flags for mpirun (no binding, and
# allowed as root).
M=${MOSAIC_MINIAPP:-build/openmp/miniapp/mosaic_miniapp}
commit=$("$M" --version | sed -n 's/.*(git \([0-9a-f]*\)\(-dirty\)\{0,1\}).*/\1\2/p' | head -1)
export OMP_NUM_THREADS=2 OMP_PROC_BIND=false
mpi_flags=(--bind-to none)
[[ "$(id -u)" == 0 ]] && mpi_flags+=(--allow-run-as-root)
