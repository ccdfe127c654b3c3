// Thin C boundary to libv4l2 and the V4L2 UAPI.
//
// Swift cannot call variadic C functions (v4l2_open, v4l2_ioctl) and does not
// import function-like macros (the VIDIOC_* request numbers are _IOWR(...)
// expressions), so this header re-exports both as plain functions and
// constants. It also brings in libudev (plain C, imported as is) for the
// hot-plug monitor. Nothing else belongs here: all logic lives in Swift.

#ifndef PARALLAX_CV4L2_H
#define PARALLAX_CV4L2_H

#include <stdint.h>
#include <stddef.h>
#include <sys/types.h>
#include <linux/videodev2.h>
#include <libudev.h>

#ifdef __cplusplus
extern "C" {
#endif

/// v4l2_open(path, flags) without the variadic mode argument.
int cv4l2_open(const char *path, int flags);
/// v4l2_fd_open: wraps an already open descriptor in libv4l2 with the given V4L2_* flags.
int cv4l2_fd_open(int fd, int v4l2_flags);
int cv4l2_close(int fd);
/// v4l2_ioctl(fd, request, arg) with a fixed pointer argument.
int cv4l2_ioctl(int fd, unsigned long request, void *arg);
void *cv4l2_mmap(void *start, size_t length, int prot, int flags, int fd, int64_t offset);
int cv4l2_munmap(void *start, size_t length);
/// The value of errno after the last failing call on this thread.
int cv4l2_errno(void);

/// libv4l2's flag that turns off its format conversion for v4l2_fd_open.
extern const int CV4L2_DISABLE_CONVERSION;

// VIDIOC_* request numbers, as plain constants.
extern const unsigned long CV4L2_VIDIOC_QUERYCAP;
extern const unsigned long CV4L2_VIDIOC_ENUM_FMT;
extern const unsigned long CV4L2_VIDIOC_G_FMT;
extern const unsigned long CV4L2_VIDIOC_S_FMT;
extern const unsigned long CV4L2_VIDIOC_TRY_FMT;
extern const unsigned long CV4L2_VIDIOC_REQBUFS;
extern const unsigned long CV4L2_VIDIOC_QUERYBUF;
extern const unsigned long CV4L2_VIDIOC_QBUF;
extern const unsigned long CV4L2_VIDIOC_DQBUF;
extern const unsigned long CV4L2_VIDIOC_STREAMON;
extern const unsigned long CV4L2_VIDIOC_STREAMOFF;
extern const unsigned long CV4L2_VIDIOC_G_PARM;
extern const unsigned long CV4L2_VIDIOC_S_PARM;
extern const unsigned long CV4L2_VIDIOC_ENUM_FRAMESIZES;
extern const unsigned long CV4L2_VIDIOC_ENUM_FRAMEINTERVALS;
extern const unsigned long CV4L2_VIDIOC_QUERYCTRL;
extern const unsigned long CV4L2_VIDIOC_G_CTRL;
extern const unsigned long CV4L2_VIDIOC_S_CTRL;
extern const unsigned long CV4L2_VIDIOC_QUERYMENU;

extern const unsigned long CV4L2_VIDIOC_ENUMINPUT;

// Control ids built from other macros (imported unreliably as expressions).
extern const uint32_t CV4L2_CID_BRIGHTNESS;
extern const uint32_t CV4L2_CID_GAIN;
extern const uint32_t CV4L2_CID_AUTOGAIN;
extern const uint32_t CV4L2_CID_AUTO_WHITE_BALANCE;
extern const uint32_t CV4L2_CID_WHITE_BALANCE_TEMPERATURE;
extern const uint32_t CV4L2_CID_EXPOSURE_AUTO;
extern const uint32_t CV4L2_CID_EXPOSURE_ABSOLUTE;
extern const uint32_t CV4L2_CID_FOCUS_ABSOLUTE;
extern const uint32_t CV4L2_CID_FOCUS_AUTO;
extern const uint32_t CV4L2_CTRL_FLAG_NEXT_CTRL;

#ifdef __cplusplus
}
#endif

#endif
