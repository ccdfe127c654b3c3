// libzstd's one-shot decompression, for the zstd-compressed chunks of MCAP files.
#ifndef PARALLAX_CZSTD_H
#define PARALLAX_CZSTD_H
#include <zstd.h>
#endif
