# ctest cmake.kokkos_view_probe_*: configures this project into a fresh
# directory with the Kokkos View probe (cmake/KokkosViewProbe.cmake) forced
# on, against this build's Kokkos, compiler and flags, and checks what the
# user would see. Only the configuration runs (tests off, nothing built).
#   EXPECT=pass     configuration succeeds and the probe ran and passed (no
#                   false alarm on a good Kokkos)
#   EXPECT=failure  with MOSAIC_KOKKOS_VIEW_PROBE_FORCE_FAIL the probe
#                   crashes: configuration fails with the message (what
#                   failed, the Kokkos version, the compiler, the upstream
#                   references, the remedies and the opt-out)
# Arguments: EXPECT, SOURCE_DIR (the project), WORK_DIR, GENERATOR, CXX,
# CXX_FLAGS, BUILD_TYPE, NATIVE_ARCH, SANITIZERS, KOKKOS_DIR,
# KOKKOSKERNELS_DIR, KOKKOS_VERSION, CXX_ID_VERSION (e.g. "GNU 12.2.0").
foreach(v EXPECT SOURCE_DIR WORK_DIR GENERATOR CXX BUILD_TYPE KOKKOS_DIR KOKKOSKERNELS_DIR KOKKOS_VERSION
          CXX_ID_VERSION)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "configure_with_view_probe.cmake: -D${v}=... is required")
  endif()
endforeach()
set(options -DMOSAIC_KOKKOS_VIEW_PROBE_ALWAYS=ON)
if(EXPECT STREQUAL "failure")
  list(APPEND options -DMOSAIC_KOKKOS_VIEW_PROBE_FORCE_FAIL=ON)
elseif(NOT EXPECT STREQUAL "pass")
  message(FATAL_ERROR "configure_with_view_probe.cmake: EXPECT is pass or failure, got '${EXPECT}'")
endif()

file(REMOVE_RECURSE "${WORK_DIR}")
execute_process(COMMAND ${CMAKE_COMMAND} -S "${SOURCE_DIR}" -B "${WORK_DIR}" -G "${GENERATOR}"
                        -DCMAKE_CXX_COMPILER=${CXX} "-DCMAKE_CXX_FLAGS=${CXX_FLAGS}" -DCMAKE_BUILD_TYPE=${BUILD_TYPE}
                        -DMOSAIC_NATIVE_ARCH=${NATIVE_ARCH} -DMOSAIC_ENABLE_SANITIZERS=${SANITIZERS}
                        -DKokkos_DIR=${KOKKOS_DIR} -DKokkosKernels_DIR=${KOKKOSKERNELS_DIR}
                        -DMOSAIC_ENABLE_TESTS=OFF ${options}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
set(output "${out}\n${err}")
message(STATUS "cmake.kokkos_view_probe: configuration exited with ${rc}; its output:\n${output}")
# CMake wraps a message's lines and indents them: compare with single spaces.
string(REGEX REPLACE "[ \t\r\n]+" " " flat "${output}")

function(require_phrase phrase)
  string(FIND "${flat}" "${phrase}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "cmake.kokkos_view_probe: the configuration's output lacks \"${phrase}\"")
  endif()
endfunction()

if(EXPECT STREQUAL "pass")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "cmake.kokkos_view_probe: the configuration failed on a good Kokkos (a false alarm)")
  endif()
  require_phrase("Kokkos View probe: compiling and running cmake/kokkos_view_probe.cpp")
  require_phrase("Kokkos View probe passed (Views of rank 1, 2 and 3")
else()
  if(rc EQUAL 0)
    message(FATAL_ERROR "cmake.kokkos_view_probe: the configuration succeeded although the probe crashed")
  endif()
  foreach(phrase IN ITEMS "the Kokkos View probe (cmake/kokkos_view_probe.cpp) crashed" "Segmentation fault"
                          "Kokkos ${KOKKOS_VERSION} (" "(${CXX_ID_VERSION})" "kokkos/kokkos/issues/7464"
                          "kokkos/kokkos/pull/8223" "kokkos/kokkos/pull/9262" "SharedAllocationRecord::decrement"
                          "GCC 12" "-DKokkos_ENABLE_IMPL_VIEW_LEGACY=ON" "another compiler"
                          "-DMOSAIC_SKIP_KOKKOS_VIEW_PROBE=ON")
    require_phrase("${phrase}")
  endforeach()
endif()
