/* backend_stub.c - remat_backend_cuda_init for builds without the CUDA toolkit. */
#include "core/backend.h"

remat_status remat_backend_cuda_init(remat_backend *out, int device, remat_error *err) {
    (void)out;
    return remat_error_set(err, REMAT_ERR_DEVICE,
                           "no CUDA device: remat was built without CUDA (device %d requested; build with "
                           "--config=cuda)",
                           device);
}
