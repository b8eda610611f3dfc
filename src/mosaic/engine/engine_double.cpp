// MosaicEngine<double> of the default execution space: the sequential and
// blocked kernels, compiled once (batched_engine.hpp declares it extern).
#include "mosaic/engine/batched_engine.hpp"

template class mosaic::MosaicEngine<double, Kokkos::DefaultExecutionSpace>;
