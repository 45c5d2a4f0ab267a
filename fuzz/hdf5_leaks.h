/* hdf5_leaks.h - HDF5_LEAKS_BEGIN() / HDF5_LEAKS_END() around calls into HDF5 whose own
 * error paths leak (HDF5 1.10, an object header failing its checksum): LeakSanitizer is
 * paused in between when the target is built with it, so that a leak report is always
 * remat's; without ASan both are no-ops. */
#ifndef REMAT_FUZZ_HDF5_LEAKS_H
#define REMAT_FUZZ_HDF5_LEAKS_H

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FUZZ_HAVE_LSAN 1
#endif
#endif
#if !defined(FUZZ_HAVE_LSAN) && defined(__SANITIZE_ADDRESS__)
#define FUZZ_HAVE_LSAN 1
#endif
#ifdef FUZZ_HAVE_LSAN
#include <sanitizer/lsan_interface.h>
#define HDF5_LEAKS_BEGIN() __lsan_disable()
#define HDF5_LEAKS_END() __lsan_enable()
#else
#define HDF5_LEAKS_BEGIN() ((void)0)
#define HDF5_LEAKS_END() ((void)0)
#endif

#endif
