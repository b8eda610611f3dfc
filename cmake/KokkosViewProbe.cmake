# The configure-time probe of a user's Kokkos (issue 37). Kokkos' mdspan-based
# View (Kokkos 4.6.99 develop, 4.7, 5.x) compiled by GCC 12 with optimization
# crashes at the first assignment to a default-constructed View (SIGSEGV in
# SharedAllocationRecord::decrement), which the engine does with every View it
# holds: the mini-app and most tests would build, then crash at their first
# step, far from the cause. Where the Kokkos found is not the bootstrap's
# (Kokkos 3.4, no mdspan View), cmake/kokkos_view_probe.cpp is compiled with
# this project's compiler and flags, linked to Kokkos::kokkos and run: a
# compile failure, a crash or a nonzero exit stops the configuration with the
# cause and the remedies. Included from the top-level CMakeLists.txt once
# Kokkos is found, the compile flags are settled and the configure summary
# (MOSAIC_KOKKOS_PREFIX, MOSAIC_COMPILER_SUMMARY) is set.

option(MOSAIC_SKIP_KOKKOS_VIEW_PROBE
       "Do not run the configure-time probe of Kokkos' View (kokkos/kokkos#7464); the mini-app may then crash at its first step"
       OFF)
option(MOSAIC_KOKKOS_VIEW_PROBE_ALWAYS
       "Run the Kokkos View probe against the bootstrap's Kokkos too, which it skips otherwise (for testing the probe)" OFF)
option(MOSAIC_KOKKOS_VIEW_PROBE_FORCE_FAIL
       "For testing the probe only: the probe program crashes on purpose, so the configuration fails" OFF)
mark_as_advanced(MOSAIC_KOKKOS_VIEW_PROBE_ALWAYS MOSAIC_KOKKOS_VIEW_PROBE_FORCE_FAIL)

# What the user reads on a failure, and where the probe cannot run.
set(mosaic_kokkos_view_fault
    "Known cause: Kokkos' mdspan-based View (Kokkos develop 4.6.99, 4.7, 5.x) compiled by GCC 12 with optimization \
crashes at the first assignment to a default-constructed View (SIGSEGV in SharedAllocationRecord::decrement): \
https://github.com/kokkos/kokkos/issues/7464, fixed by https://github.com/kokkos/kokkos/pull/8223 (merged July 2025); \
a GCC 12.5 case against Kokkos 5.1.1 was fixed by https://github.com/kokkos/kokkos/pull/9262 (June 2026). \
The engine assigns every View it holds that way, so the mini-app would crash at its first step.\n\
Remedies, any one:\n\
  - a Kokkos release that has those fixes;\n\
  - another compiler for Kokkos and this project (not GCC 12);\n\
  - Kokkos rebuilt with -DKokkos_ENABLE_IMPL_VIEW_LEGACY=ON (the View before mdspan; Kokkos Kernels rebuilt against it).\n\
-DMOSAIC_SKIP_KOKKOS_VIEW_PROBE=ON configures without the probe (README.md, \"Using your own Kokkos\").")

# Why the probe cannot run on this machine, empty where it can (tests/
# registers the probe's tests only there). Running it means running
# Kokkos::initialize: a device backend initializes its GPU there, which the
# configuring machine need not have.
if(CMAKE_CROSSCOMPILING)
  set(MOSAIC_KOKKOS_VIEW_PROBE_CANNOT_RUN "cross-compiling: the probe cannot run on this machine")
elseif(Kokkos_DEVICES MATCHES "CUDA|HIP|SYCL|OPENMPTARGET")
  set(MOSAIC_KOKKOS_VIEW_PROBE_CANNOT_RUN
      "Kokkos' device backend (${Kokkos_DEVICES}) would need the GPU at configure time")
else()
  set(MOSAIC_KOKKOS_VIEW_PROBE_CANNOT_RUN "")
endif()

function(mosaic_kokkos_view_probe)
  if(MOSAIC_SKIP_KOKKOS_VIEW_PROBE)
    message(STATUS "mosaic_miniapp: Kokkos View probe skipped (MOSAIC_SKIP_KOKKOS_VIEW_PROBE=ON)")
    return()
  endif()
  file(REAL_PATH "${MOSAIC_KOKKOS_PREFIX}" kokkos_prefix)
  file(REAL_PATH "${PROJECT_SOURCE_DIR}/.deps/kokkos-openmp" bootstrap_prefix)
  if(kokkos_prefix STREQUAL bootstrap_prefix AND NOT MOSAIC_KOKKOS_VIEW_PROBE_ALWAYS)
    return()
  endif()

  if(MOSAIC_KOKKOS_VIEW_PROBE_CANNOT_RUN)
    # Kokkos before the mdspan View, or built with the legacy View, has no such fault to warn of.
    if(Kokkos_VERSION VERSION_LESS 4.6.99 OR "IMPL_VIEW_LEGACY" IN_LIST Kokkos_OPTIONS)
      message(STATUS "mosaic_miniapp: Kokkos View probe not run (${MOSAIC_KOKKOS_VIEW_PROBE_CANNOT_RUN}); Kokkos ${Kokkos_VERSION}'s View is not the mdspan-based one")
    else()
      message(WARNING "mosaic_miniapp: the Kokkos View probe did not run (${MOSAIC_KOKKOS_VIEW_PROBE_CANNOT_RUN}) with Kokkos ${Kokkos_VERSION} \
(${MOSAIC_KOKKOS_PREFIX}) and ${MOSAIC_COMPILER_SUMMARY}. If the mini-app crashes at its first step:\n${mosaic_kokkos_view_fault}")
    endif()
    return()
  endif()

  # The project's flags: CMAKE_CXX_FLAGS and the build type's (try_run takes
  # the configuration's flags from CMAKE_TRY_COMPILE_CONFIGURATION, Debug
  # unless set, and the fault needs optimization), the directory's options
  # (the sanitizers) and MOSAIC_ARCH_FLAGS (-march=native ...).
  if(CMAKE_BUILD_TYPE)
    set(CMAKE_TRY_COMPILE_CONFIGURATION "${CMAKE_BUILD_TYPE}")
  else()
    set(CMAKE_TRY_COMPILE_CONFIGURATION Release)  # multi-config generators: the optimized build
  endif()
  string(TOUPPER "${CMAKE_TRY_COMPILE_CONFIGURATION}" config)
  get_directory_property(directory_compile_options COMPILE_OPTIONS)
  get_directory_property(directory_link_options LINK_OPTIONS)
  set(compile_options ${directory_compile_options} ${MOSAIC_ARCH_FLAGS})
  if(MOSAIC_KOKKOS_VIEW_PROBE_FORCE_FAIL)
    list(APPEND compile_options -DMOSAIC_KOKKOS_VIEW_PROBE_FORCE_FAIL)
  endif()
  string(JOIN " " flags ${CMAKE_CXX_FLAGS} ${CMAKE_CXX_FLAGS_${config}} ${compile_options})
  set(probe_source "${CMAKE_CURRENT_FUNCTION_LIST_DIR}/kokkos_view_probe.cpp")

  # A pass is kept for the same Kokkos, compiler, flags and probe source, so
  # that a reconfiguration (every commit: CMakeLists.txt follows HEAD) does
  # not compile the probe again. The Kokkos is its prefix, version and
  # options, and the time its core library was built: a Kokkos rebuilt in
  # the same prefix (a newer develop state, or the legacy View) is probed
  # again.
  file(SHA256 "${probe_source}" probe_hash)
  if(TARGET Kokkos::kokkoscore)
    get_target_property(kokkos_core_library Kokkos::kokkoscore LOCATION)
    file(TIMESTAMP "${kokkos_core_library}" kokkos_core_built UTC)
  endif()
  string(JOIN "|" probe_key "${Kokkos_DIR}" "${Kokkos_VERSION}" "${Kokkos_OPTIONS}" "${kokkos_core_built}"
         "${CMAKE_CXX_COMPILER}" "${CMAKE_CXX_COMPILER_VERSION}" "${flags}" "${directory_link_options}" "${probe_hash}")
  if(MOSAIC_KOKKOS_VIEW_PROBE_PASSED_FOR STREQUAL probe_key)
    message(STATUS "mosaic_miniapp: Kokkos View probe passed (earlier run, same Kokkos, compiler and flags)")
    return()
  endif()

  message(STATUS "mosaic_miniapp: Kokkos View probe: compiling and running cmake/kokkos_view_probe.cpp")
  try_run(run_result compile_result SOURCES "${probe_source}" NO_CACHE
          COMPILE_DEFINITIONS ${compile_options}
          LINK_OPTIONS ${directory_link_options}
          LINK_LIBRARIES Kokkos::kokkos
          CXX_STANDARD ${CMAKE_CXX_STANDARD} CXX_STANDARD_REQUIRED ON CXX_EXTENSIONS OFF
          COMPILE_OUTPUT_VARIABLE compile_output
          RUN_OUTPUT_VARIABLE run_output)
  set(built_with "Kokkos ${Kokkos_VERSION} (${MOSAIC_KOKKOS_PREFIX}, backends ${Kokkos_DEVICES}), \
compiler ${MOSAIC_COMPILER_SUMMARY}, ${CMAKE_TRY_COMPILE_CONFIGURATION} flags: ${flags}")
  if(NOT compile_result)
    message(FATAL_ERROR "mosaic_miniapp: the Kokkos View probe (cmake/kokkos_view_probe.cpp) failed to compile \
with ${built_with}\nCompiler output:\n${compile_output}\n${mosaic_kokkos_view_fault}")
  endif()
  # try_run gives the exit status, or FAILED_TO_RUN for a process that did
  # not exit (a signal; the run output then ends with its name).
  if(run_result STREQUAL "FAILED_TO_RUN")
    set(what "crashed (killed by a signal, named at the end of its output)")
  elseif(NOT run_result EQUAL 0)
    set(what "exited with status ${run_result}")
  endif()
  if(what)
    message(FATAL_ERROR "mosaic_miniapp: the Kokkos View probe (cmake/kokkos_view_probe.cpp) ${what} \
with ${built_with}\nIts output:\n${run_output}\n${mosaic_kokkos_view_fault}")
  endif()
  set(MOSAIC_KOKKOS_VIEW_PROBE_PASSED_FOR "${probe_key}" CACHE INTERNAL
      "The Kokkos, compiler, flags and probe source of the last Kokkos View probe that passed")
  message(STATUS "mosaic_miniapp: Kokkos View probe passed (Views of rank 1, 2 and 3 default-constructed, assigned, copied and sliced)")
endfunction()

mosaic_kokkos_view_probe()
