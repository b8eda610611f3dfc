# ctest install.consumer: cmake --install this build into a fresh prefix,
# check the installed layout, run the installed mini-app on the installed
# smoke deck (--dry-run: it validates the deck and prints the plan), then
# configure, build and run the consumer project against the prefix.
# Arguments: BUILD_DIR, WORK_DIR, SOURCE_DIR, CXX, and CXX_FLAGS (the
# build's CMAKE_CXX_FLAGS, e.g. the -arch=sm_90 that Kokkos 4's nvcc_wrapper
# needs with CUDA 13, whether given as CXXFLAGS or -DCMAKE_CXX_FLAGS).
foreach(v BUILD_DIR WORK_DIR SOURCE_DIR CXX)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "run_consumer.cmake: -D${v}=... is required")
  endif()
endforeach()
function(run_step what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "install.consumer: ${what} failed (${rc}):\n${out}\n${err}")
  endif()
  message(STATUS "install.consumer: ${what}: ok\n${out}")
endfunction()

file(REMOVE_RECURSE "${WORK_DIR}")
set(prefix "${WORK_DIR}/prefix")
run_step("cmake --install" ${CMAKE_COMMAND} --install "${BUILD_DIR}" --prefix "${prefix}")
foreach(f bin/mosaic_miniapp bin/mosaic_bench share/mosaic_miniapp/inputs/smoke_cpu.yaml
          share/mosaic_miniapp/analysis/collect.py share/mosaic_miniapp/docs/result.schema.json
          include/mosaic/engine/batched_engine.hpp)
  if(NOT EXISTS "${prefix}/${f}")
    message(FATAL_ERROR "install.consumer: ${f} is not installed under ${prefix}")
  endif()
endforeach()
file(GLOB config "${prefix}/lib*/cmake/mosaic/mosaicConfig.cmake")
if(NOT config)
  message(FATAL_ERROR "install.consumer: no lib*/cmake/mosaic/mosaicConfig.cmake under ${prefix}")
endif()
run_step("installed mosaic_miniapp --dry-run" "${prefix}/bin/mosaic_miniapp"
         "${prefix}/share/mosaic_miniapp/inputs/smoke_cpu.yaml" --dry-run)
run_step("configure the consumer" ${CMAKE_COMMAND} -S "${SOURCE_DIR}" -B "${WORK_DIR}/build"
         -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_CXX_COMPILER=${CXX} "-DCMAKE_CXX_FLAGS=${CXX_FLAGS}"
         -DCMAKE_BUILD_TYPE=Release)
run_step("build the consumer" ${CMAKE_COMMAND} --build "${WORK_DIR}/build")
run_step("run the consumer" "${WORK_DIR}/build/consumer")
