/* hdf5_leaks.h - for the tests and fuzzers that read corrupted HDF5 files on purpose:
 * HDF5_LEAKS_BEGIN() / HDF5_LEAKS_END() around calls into HDF5 whose own
 * error paths leak (HDF5 1.10, an object header failing its checksum): LeakSanitizer is
 * paused in between when the target is built with it, so that a leak report is always
 * remat's (still counted through remat_xmem_live); without ASan both are no-ops. */
#ifndef REMAT_TESTS_HDF5_LEAKS_H
#define REMAT_TESTS_HDF5_LEAKS_H

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define REMAT_HAVE_LSAN 1
#endif
#endif
#if !defined(REMAT_HAVE_LSAN) && defined(__SANITIZE_ADDRESS__)
#define REMAT_HAVE_LSAN 1
#endif
#ifdef REMAT_HAVE_LSAN
#include <sanitizer/lsan_interface.h>
#define HDF5_LEAKS_BEGIN() __lsan_disable()
#define HDF5_LEAKS_END() __lsan_enable()
#else
#define HDF5_LEAKS_BEGIN() ((void)0)
#define HDF5_LEAKS_END() ((void)0)
#endif

#endif
