// The run loop for float with both data sources (synthetic drift, npy files),
// compiled once (run.hpp declares it extern).
#include "mosaic/app/run.hpp"

template nlohmann::json mosaic::run_point<float>(const mosaic::RunConfig&, MPI_Comm, mosaic::RunControl*);
