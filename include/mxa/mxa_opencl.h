/*
 * mxa inside an application's own OpenCL context: an mxa device over the application's
 * cl_context and cl_device_id, mxa buffers over its cl_mem, and attention enqueued on its
 * command queue after its events, returning an event. Include after, or instead of,
 * <mxa/mxa.h>; every function follows its conventions (an mxa_status, never an abort,
 * mxa_last_error_message() on failure, nothing written on failure). The functions exist
 * when mxa was built with its OpenCL backend (mxa_backend_get_info: "opencl" built);
 * mxa loads the OpenCL library at run time, the application links it as it likes.
 *
 * Lifetimes. mxa retains what it is given (clRetainContext, clRetainDevice,
 * clRetainMemObject) and releases it when the mxa device is closed or the mxa buffer
 * destroyed; the application may release its own references at any time after the call.
 * mxa never creates a context here; it creates one command queue of its own on the
 * application's context, for the synchronous calls (mxa_attention, mxa_buffer_upload,
 * mxa_buffer_download, mxa_attention_async) on that device.
 *
 * Ordering. mxa_opencl_attention_enqueue runs on the application's queue: its first
 * command waits for the `wait` events, and `done` completes when o (and lse) are written.
 * The application owes the rest: q, k, v, bias and mask must be written before the wait
 * list completes (an event of their write, or the same in-order queue), and o and lse may
 * be read only after `done` (or later on the same in-order queue). mxa flushes the queue
 * after enqueueing, so waiting on `done` from the host cannot hang.
 *
 * Scratch. An mxa device has one set of scratch buffers (quantized Q, K, V), shared by
 * all its calls. Enqueued calls on one device are therefore ordered by mxa: each waits for
 * the previous one's work (mxa adds that event to the wait list), also across queues, so
 * calls on two queues of one device run one after the other, never at the same time (use
 * one mxa device per concurrent stream). A synchronous operation on the device (the
 * functions of mxa.h) first waits on the host for an enqueued call's work, and an enqueued
 * call first completes a pending mxa_attention_async. Scratch grows on the first call of a
 * given size and is kept: once the largest shapes have run, an enqueue allocates no device
 * memory (and builds no kernels: the first call of each shape and recipe compiles them,
 * which can take seconds; run each shape once before timing).
 *
 * Thread safety. Like every mxa device, calls on one device are serialised by mxa (a lock
 * held while enqueueing, not while the work runs); the queue is the application's and
 * mxa only enqueues on it and flushes it.
 */
#ifndef MXA_MXA_OPENCL_H
#define MXA_MXA_OPENCL_H

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 300 /* the Khronos headers' default, said quietly */
#endif
#include <CL/cl.h>

#include "mxa/mxa.h"

#ifdef __cplusplus
extern "C" {
#endif

/** An mxa device over the application's `context` and `device` (which must be one of the
 *  context's devices), registered with `rt` like mxa_device_open's devices: mxa_device_close
 *  closes it, destroying the runtime closes it too. Its info id is "opencl:adopted". The
 *  device must be able to run mxa's kernels (OpenCL C 1.2, 16 KiB local memory, work-groups
 *  of 128), else MXA_ERR_UNSUPPORTED says what is missing. */
MXA_API mxa_status mxa_opencl_device_create(mxa_runtime *rt, cl_context context, cl_device_id device,
                                            mxa_device **out);

/** An mxa buffer over bytes [offset, offset + size) of the application's `mem`, usable as any
 *  mxa buffer of `dev` (tensors of mxa_attention and of the enqueue below, mxa_buffer_upload and
 *  mxa_buffer_download); `dev` is an OpenCL device, adopted or opened by mxa. mem is retained
 *  and released by mxa_buffer_destroy (or when dev is closed), never freed by mxa. offset must
 *  be a multiple of 4 and the range inside mem; a cl_mem of another context is refused. */
MXA_API mxa_status mxa_opencl_buffer_wrap(mxa_device *dev, cl_mem mem, size_t offset, size_t size,
                                          mxa_buffer **out);

/** mxa_attention enqueued on the application's in-order `queue` (of dev's context and device),
 *  without waiting: returns once every command is enqueued (and the queue flushed). The first
 *  command waits for `wait` (num_wait events, may be 0 / NULL); `done` (may be NULL) receives a
 *  new event, which the application releases, that completes when o and lse are written. Every
 *  tensor (q, k, v, o, lse and desc's bias and mask) must be a buffer of dev (o f32, f16 or
 *  bf16); desc->key_lengths is read before the function returns. Checked as mxa_attention checks
 *  its arguments, plus: dev is an OpenCL device, the queue belongs to its context and device
 *  and is in order. An argument error is one clear error and enqueues nothing; a later failure
 *  (a kernel that does not build, a driver out of resources) may leave commands enqueued that
 *  write mxa's scratch only, never o or lse, and sets no `done`. */
MXA_API mxa_status mxa_opencl_attention_enqueue(mxa_device *dev, cl_command_queue queue, cl_uint num_wait,
                                                const cl_event *wait, cl_event *done,
                                                const mxa_attention_desc *desc, const mxa_tensor *q,
                                                const mxa_tensor *k, const mxa_tensor *v, mxa_tensor *o,
                                                mxa_tensor *lse);

#ifdef __cplusplus
}
#endif

#endif
