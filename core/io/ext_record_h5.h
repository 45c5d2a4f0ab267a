/* ext_record_h5.h - reading the /record group of an external allocation stream
 * (private to core/io: ext_trace_h5.c calls it while it reads the stream). */
#ifndef REMAT_EXT_RECORD_H5_H
#define REMAT_EXT_RECORD_H5_H

#include "core/io/ext_record.h"
#include "core/io/ext_trace.h"
#include "core/io/h5_util.h"

/* Reads /record of f into a new record (*out, remat_xmalloc'd), folding its datasets
 * and attributes into *crc in the order of docs/trace-schema.md, and checks it against
 * t's device 0 (read before): one annotation per event, storages paired (an alloc
 * starts a new id, a free ends a live one of the same bytes), marks in order and in
 * range, module, layer and phase indices in range. REMAT_ERR_INPUT naming path and
 * the dataset. */
remat_status remat_ext_record_read_h5(hid_t f, const char *path, const remat_ext_trace *t, remat_ext_record **out,
                                      uint32_t *crc, remat_error *err);

#endif
