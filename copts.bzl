"""One strict compiler-flag list shared by every target (abseil/brotli style)."""
REMAT_COPTS = [
    "-Wall",
    "-Wextra",
    "-Werror",
    "-Wshadow",
    "-Wpointer-arith",
    "-Wno-unused-parameter",
    "-I/usr/include/hdf5/serial",
]
REMAT_C_COPTS = REMAT_COPTS + ["-Wstrict-prototypes", "-Wmissing-prototypes"]
HDF5_LINKOPTS = ["-L/usr/lib/x86_64-linux-gnu/hdf5/serial", "-lhdf5_serial"]
GTEST_LINKOPTS = ["-lgtest", "-lgtest_main", "-pthread"]
