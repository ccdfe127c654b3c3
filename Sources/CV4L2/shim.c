#include "CV4L2.h"

#include <errno.h>
#include <libv4l2.h>
#include <sys/ioctl.h>
#include <sys/mman.h>

int cv4l2_open(const char *path, int flags) { return v4l2_open(path, flags); }
int cv4l2_fd_open(int fd, int v4l2_flags) { return v4l2_fd_open(fd, v4l2_flags); }
int cv4l2_close(int fd) { return v4l2_close(fd); }
int cv4l2_ioctl(int fd, unsigned long request, void *arg) { return v4l2_ioctl(fd, request, arg); }
void *cv4l2_mmap(void *start, size_t length, int prot, int flags, int fd, int64_t offset) {
    return v4l2_mmap(start, length, prot, flags, fd, offset);
}
int cv4l2_munmap(void *start, size_t length) { return v4l2_munmap(start, length); }
int cv4l2_errno(void) { return errno; }

const int CV4L2_DISABLE_CONVERSION = V4L2_DISABLE_CONVERSION;

const unsigned long CV4L2_VIDIOC_QUERYCAP = VIDIOC_QUERYCAP;
const unsigned long CV4L2_VIDIOC_ENUM_FMT = VIDIOC_ENUM_FMT;
const unsigned long CV4L2_VIDIOC_G_FMT = VIDIOC_G_FMT;
const unsigned long CV4L2_VIDIOC_S_FMT = VIDIOC_S_FMT;
const unsigned long CV4L2_VIDIOC_TRY_FMT = VIDIOC_TRY_FMT;
const unsigned long CV4L2_VIDIOC_REQBUFS = VIDIOC_REQBUFS;
const unsigned long CV4L2_VIDIOC_QUERYBUF = VIDIOC_QUERYBUF;
const unsigned long CV4L2_VIDIOC_QBUF = VIDIOC_QBUF;
const unsigned long CV4L2_VIDIOC_DQBUF = VIDIOC_DQBUF;
const unsigned long CV4L2_VIDIOC_STREAMON = VIDIOC_STREAMON;
const unsigned long CV4L2_VIDIOC_STREAMOFF = VIDIOC_STREAMOFF;
const unsigned long CV4L2_VIDIOC_G_PARM = VIDIOC_G_PARM;
const unsigned long CV4L2_VIDIOC_S_PARM = VIDIOC_S_PARM;
const unsigned long CV4L2_VIDIOC_ENUM_FRAMESIZES = VIDIOC_ENUM_FRAMESIZES;
const unsigned long CV4L2_VIDIOC_ENUM_FRAMEINTERVALS = VIDIOC_ENUM_FRAMEINTERVALS;
const unsigned long CV4L2_VIDIOC_QUERYCTRL = VIDIOC_QUERYCTRL;
const unsigned long CV4L2_VIDIOC_G_CTRL = VIDIOC_G_CTRL;
const unsigned long CV4L2_VIDIOC_S_CTRL = VIDIOC_S_CTRL;
const unsigned long CV4L2_VIDIOC_QUERYMENU = VIDIOC_QUERYMENU;

const unsigned long CV4L2_VIDIOC_ENUMINPUT = VIDIOC_ENUMINPUT;

const uint32_t CV4L2_CID_BRIGHTNESS = V4L2_CID_BRIGHTNESS;
const uint32_t CV4L2_CID_GAIN = V4L2_CID_GAIN;
const uint32_t CV4L2_CID_AUTOGAIN = V4L2_CID_AUTOGAIN;
const uint32_t CV4L2_CID_AUTO_WHITE_BALANCE = V4L2_CID_AUTO_WHITE_BALANCE;
const uint32_t CV4L2_CID_WHITE_BALANCE_TEMPERATURE = V4L2_CID_WHITE_BALANCE_TEMPERATURE;
const uint32_t CV4L2_CID_EXPOSURE_AUTO = V4L2_CID_EXPOSURE_AUTO;
const uint32_t CV4L2_CID_EXPOSURE_ABSOLUTE = V4L2_CID_EXPOSURE_ABSOLUTE;
const uint32_t CV4L2_CID_FOCUS_ABSOLUTE = V4L2_CID_FOCUS_ABSOLUTE;
const uint32_t CV4L2_CID_FOCUS_AUTO = V4L2_CID_FOCUS_AUTO;
const uint32_t CV4L2_CTRL_FLAG_NEXT_CTRL = V4L2_CTRL_FLAG_NEXT_CTRL;
