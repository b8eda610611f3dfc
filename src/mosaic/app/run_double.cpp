// The run loop for double with both data sources (synthetic drift, npy files),
// compiled once (run.hpp declares it extern).
#include "mosaic/app/run.hpp"

template nlohmann::json mosaic::run_point<double>(const mosaic::RunConfig&, MPI_Comm, mosaic::RunControl*);
