// Kokkos' command-line flags (src/mosaic/app/kokkos_flags.hpp): both spellings
// reach Kokkos 3 and Kokkos 4 in the one each parses, what Kokkos 3 lacks is
// left to the driver, and a flag no Kokkos knows is refused with the
// closest name. Both versions are checked whichever Kokkos this build uses.
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <Kokkos_Core.hpp>

#include "mosaic/app/kokkos_flags.hpp"

namespace {

using mosaic::kokkos_flags::translate;
using mosaic::kokkos_flags::Translation;
using Args = std::vector<std::string>;

// The message translate() throws for `flags`, or "<no error>".
std::string error_of(const Args& flags, int kokkos_major) {
  try {
    translate(flags, kokkos_major);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "<no error>";
}

TEST(KokkosFlags, FourXNamesReachKokkos3InItsSpelling) {
  const Translation t = translate({"--kokkos-num-threads=2", "--kokkos-tools-libs=libkp.so", "--kokkos-device-id=1",
                                   "--kokkos-disable-warnings", "--kokkos-tune-internals=no"},
                                  3);
  EXPECT_EQ(t.arguments, (Args{"--kokkos-threads=2", "--kokkos-tools-library=libkp.so", "--kokkos-device-id=1",
                               "--kokkos-disable-warnings"}));
  EXPECT_TRUE(t.device_chosen);
  EXPECT_FALSE(t.help);
}

TEST(KokkosFlags, FourXNamesPassUntranslatedToKokkos4) {
  const Args flags = {"--kokkos-num-threads=2", "--kokkos-tools-libs=libkp.so", "--kokkos-print-configuration",
                      "--kokkos-map-device-id-by=random", "--kokkos-disable-warnings=false"};
  const Translation t = translate(flags, 4);
  EXPECT_EQ(t.arguments, flags);
  EXPECT_TRUE(t.device_chosen);
  EXPECT_FALSE(t.print_configuration);
  EXPECT_EQ(t.map_device_id_by, "");
}

TEST(KokkosFlags, OldNamesReachKokkos4InItsSpelling) {
  EXPECT_EQ(translate({"--kokkos-threads=3", "--kokkos-device=0", "--kokkos-tools-library=a.so"}, 4).arguments,
            (Args{"--kokkos-num-threads=3", "--kokkos-device-id=0", "--kokkos-tools-libs=a.so"}));
  EXPECT_EQ(translate({"--kokkos-threads=3", "--kokkos-ndevices=2,1", "--kokkos-numa=2"}, 3).arguments,
            (Args{"--kokkos-threads=3", "--kokkos-num-devices=2,1", "--kokkos-numa=2"}));
}

TEST(KokkosFlags, WhatKokkos3LacksIsLeftToTheDriver) {
  const Translation t = translate({"--kokkos-print-configuration", "--kokkos-map-device-id-by=random"}, 3);
  EXPECT_TRUE(t.arguments.empty());
  EXPECT_TRUE(t.print_configuration);
  EXPECT_EQ(t.map_device_id_by, "random");
  EXPECT_FALSE(t.device_chosen);  // the driver picks the GPU itself
  EXPECT_FALSE(translate({"--kokkos-print-configuration=0"}, 3).print_configuration);
}

TEST(KokkosFlags, HelpIsTheDriversOnEveryVersion) {
  for (int major : {3, 4, 5}) {
    const Translation t = translate({"--kokkos-help"}, major);
    EXPECT_TRUE(t.help) << major;
    EXPECT_TRUE(t.arguments.empty()) << major;
  }
}

TEST(KokkosFlags, UnknownFlagIsRefusedWithTheClosestName) {
  for (int major : {3, 4}) {
    EXPECT_EQ(error_of({"--kokkos-num-thread=2"}, major),
              "unknown Kokkos flag '--kokkos-num-thread=2' (did you mean '--kokkos-num-threads'?); "
              "mosaic_miniapp --help lists the Kokkos flags");
    EXPECT_NE(error_of({"--kokkos-tools-lib=x.so"}, major).find("did you mean '--kokkos-tools-libs'"),
              std::string::npos);
    EXPECT_EQ(error_of({"--kokkos-zzzzzzzz"}, major).find("did you mean"), std::string::npos);
    EXPECT_NE(error_of({"--kokkos"}, major).find("unknown Kokkos flag '--kokkos'"), std::string::npos);
  }
}

TEST(KokkosFlags, MalformedValuesAreRefused) {
  EXPECT_EQ(error_of({"--kokkos-num-threads"}, 3),
            "Kokkos flag '--kokkos-num-threads': needs a value after '=' (--kokkos-num-threads=INT)");
  EXPECT_NE(error_of({"--kokkos-num-threads=0"}, 4).find("expected an integer >= 1"), std::string::npos);
  EXPECT_NE(error_of({"--kokkos-num-threads=two"}, 4).find("expected an integer >= 1"), std::string::npos);
  EXPECT_NE(error_of({"--kokkos-device-id=-1"}, 3).find("expected an integer >= 0"), std::string::npos);
  EXPECT_NE(error_of({"--kokkos-disable-warnings=maybe"}, 3).find("expected yes, true, 1"), std::string::npos);
  EXPECT_NE(error_of({"--kokkos-map-device-id-by=node"}, 4).find("expected mpi_rank or random"), std::string::npos);
  EXPECT_NE(error_of({"--kokkos-tools-help=1"}, 4).find("takes no value"), std::string::npos);
  EXPECT_NE(error_of({"--kokkos-tools-libs="}, 3).find("needs a value"), std::string::npos);
}

TEST(KokkosFlags, FlagsKokkos4RemovedAreRefusedThere) {
  EXPECT_EQ(error_of({"--kokkos-numa=2"}, 4),
            "Kokkos flag '--kokkos-numa=2': Kokkos 4 has no such flag (Kokkos 4.0 removed it)");
  EXPECT_NE(error_of({"--kokkos-num-devices=2"}, 5).find("Kokkos 5 has no such flag"), std::string::npos);
}

// Kokkos 3 reads KOKKOS_PROFILE_LIBRARY only: the 4.x variables it lacks
// become their flags, ahead of the command line's.
TEST(KokkosFlags, Kokkos4VariablesBecomeFlagsOnKokkos3) {
  setenv("KOKKOS_TOOLS_LIBS", "libkp_kernel_timer.so", 1);
  setenv("KOKKOS_PRINT_CONFIGURATION", "yes", 1);
  const Translation t3 = translate({"--kokkos-tools-args=-v"}, 3);
  EXPECT_EQ(t3.arguments, (Args{"--kokkos-tools-library=libkp_kernel_timer.so", "--kokkos-tools-args=-v"}));
  EXPECT_TRUE(t3.print_configuration);
  EXPECT_TRUE(translate({}, 4).arguments.empty());  // Kokkos 4 reads them itself
  setenv("KOKKOS_PRINT_CONFIGURATION", "perhaps", 1);
  EXPECT_NE(error_of({}, 3).find("environment variable KOKKOS_PRINT_CONFIGURATION"), std::string::npos);
  unsetenv("KOKKOS_TOOLS_LIBS");
  unsetenv("KOKKOS_PRINT_CONFIGURATION");
}

// A GPU chosen through Kokkos' own environment variables is the user's
// choice: the driver must not add --kokkos-device-id (Kokkos 3.4 refuses
// to initialize with both), on the versions that read each variable.
TEST(KokkosFlags, DeviceChosenByTheEnvironmentWins) {
  for (const char* v : {"KOKKOS_DEVICE_ID", "KOKKOS_NUM_DEVICES", "KOKKOS_VISIBLE_DEVICES", "KOKKOS_MAP_DEVICE_ID_BY"})
    unsetenv(v);
  EXPECT_FALSE(translate({}, 3).device_chosen);
  EXPECT_FALSE(translate({}, 4).device_chosen);
  setenv("KOKKOS_DEVICE_ID", "1", 1);
  for (int major : {3, 4, 5}) {
    const Translation t = translate({}, major);
    EXPECT_TRUE(t.device_chosen) << major;
    EXPECT_EQ(t.device_chosen_by, "KOKKOS_DEVICE_ID");
    EXPECT_TRUE(t.arguments.empty());
  }
  setenv("KOKKOS_DEVICE_ID", "", 1);  // set but empty: no choice
  EXPECT_FALSE(translate({}, 4).device_chosen);
  unsetenv("KOKKOS_DEVICE_ID");
  setenv("KOKKOS_NUM_DEVICES", "2", 1);
  EXPECT_TRUE(translate({}, 3).device_chosen);
  EXPECT_FALSE(translate({}, 4).device_chosen);  // Kokkos 4 does not read it
  unsetenv("KOKKOS_NUM_DEVICES");
  setenv("KOKKOS_MAP_DEVICE_ID_BY", "random", 1);
  EXPECT_TRUE(translate({}, 4).device_chosen);  // Kokkos 4 maps by it itself
  const Translation t3 = translate({}, 3);      // Kokkos 3: the driver maps by it
  EXPECT_FALSE(t3.device_chosen);
  EXPECT_EQ(t3.map_device_id_by, "random");
  unsetenv("KOKKOS_MAP_DEVICE_ID_BY");
  EXPECT_TRUE(translate({"--kokkos-device-id=0"}, 3).device_chosen);
}

TEST(KokkosFlags, HelpListsEveryFlagWithItsOtherSpellings) {
  const std::string help = mosaic::kokkos_flags::help();
  for (const char* line :
       {"--kokkos-num-threads=INT", "also --kokkos-threads", "--kokkos-tools-libs=STR", "also --kokkos-tools-library",
        "--kokkos-map-device-id-by=mpi_rank|random", "--kokkos-print-configuration[=BOOL]", "--kokkos-numa=INT",
        "Kokkos 3 only", "also --kokkos-ndevices"})
    EXPECT_NE(help.find(line), std::string::npos) << line << "\n" << help;
}

}  // namespace

// The host threads Kokkos will start (issue 32: past the OpenMP backend's
// pool of 512 the process crashed): the flag in either spelling, else
// KOKKOS_NUM_THREADS (checked), else the OpenMP default.
TEST(KokkosFlags, HostThreadsComeFromTheFlagTheVariableOrOpenMP) {
  using mosaic::kokkos_flags::host_threads;
  unsetenv("KOKKOS_NUM_THREADS");
  setenv("OMP_NUM_THREADS", "6", 1);
  EXPECT_EQ(host_threads(translate({}, 3), 6).count, 6);
  EXPECT_EQ(host_threads(translate({}, 3), 6).set_by, "OMP_NUM_THREADS");
  unsetenv("OMP_NUM_THREADS");
  EXPECT_EQ(host_threads(translate({}, 4), 96).set_by, "OpenMP's default: OMP_NUM_THREADS is not set");
  for (int major : {3, 4})
    for (const char* flag : {"--kokkos-num-threads=768", "--kokkos-threads=768"}) {
      const auto t = host_threads(translate({flag}, major), 6);
      EXPECT_EQ(t.count, 768) << flag << " " << major;
      EXPECT_EQ(t.set_by, "--kokkos-num-threads=768");
    }
  setenv("KOKKOS_NUM_THREADS", "600", 1);
  EXPECT_EQ(host_threads(translate({}, 3), 6).count, 600);
  EXPECT_EQ(host_threads(translate({}, 3), 6).set_by, "KOKKOS_NUM_THREADS=600");
  EXPECT_EQ(host_threads(translate({"--kokkos-num-threads=2"}, 4), 6).count, 2);  // the flag first
  for (const char* bad : {"abc", "0", "-3", "", "12x"}) {
    setenv("KOKKOS_NUM_THREADS", bad, 1);
    try {
      host_threads(translate({}, 3), 6);
      ADD_FAILURE() << "KOKKOS_NUM_THREADS=" << bad << " accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("KOKKOS_NUM_THREADS: expected an integer >= 1"), std::string::npos)
          << e.what();
    }
  }
  unsetenv("KOKKOS_NUM_THREADS");
}

// The limit is the Kokkos built against's own pool size (an internal name,
// checked on the versions the project is tested with).
TEST(KokkosFlags, OpenMPThreadLimitIsKokkosPoolSize) {
#if defined(KOKKOS_ENABLE_OPENMP) && KOKKOS_VERSION >= 40000 && KOKKOS_VERSION < 40700
  EXPECT_EQ(mosaic::kokkos_flags::kOpenMPMaxThreads, int(Kokkos::Impl::OpenMPTraits::MAX_THREAD_COUNT));
#elif defined(KOKKOS_ENABLE_OPENMP) && KOKKOS_VERSION < 40000
  EXPECT_EQ(mosaic::kokkos_flags::kOpenMPMaxThreads, int(Kokkos::Impl::OpenMPExec::MAX_THREAD_COUNT));
#else
  GTEST_SKIP() << "no OpenMP backend, or a Kokkos whose internal name is not checked here";
#endif
}
