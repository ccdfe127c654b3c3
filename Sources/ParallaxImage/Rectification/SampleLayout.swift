/// Where the channels of one sample grid sit in memory: the bytes between
/// horizontally adjacent samples and the byte offset of each channel.
///
/// The luma of YUYV is a one-channel grid with a 2-byte step; its chroma is
/// a two-channel grid (Cb at 1, Cr at 3) with a 4-byte step at half the width.
struct SampleLayout: Hashable, Sendable {
    /// Bytes from one sample to the next in a row.
    var pixelStride: Int
    /// Number of channels (1…4).
    var channels: Int
    /// Byte offsets of channels 0…3 within a sample (unused entries are 0).
    var offsets: SIMD4<Int>
    /// The value written where the source has no pixel (0 = black for luma
    /// and RGB, 128 = neutral for chroma).
    var border: UInt8

    static func interleaved(_ channels: Int) -> SampleLayout {
        SampleLayout(pixelStride: channels, channels: channels, offsets: SIMD4(0, 1, 2, 3), border: 0)
    }

    /// True when the channels are exactly bytes 0…3 of a 4-byte sample.
    var isPacked4: Bool { pixelStride == 4 && channels == 4 }
    /// True when the channels are exactly bytes 0…2 of a 3-byte sample.
    var isPacked3: Bool { pixelStride == 3 && channels == 3 }
    /// True for a one-channel plane with a 2-byte step (YUYV / UYVY luma).
    var isLuma422: Bool { pixelStride == 2 && channels == 1 }
    /// True for two-channel chroma read with 4-byte loads: YUYV / UYVY chroma
    /// (4-byte step) and NV12 chroma (2-byte step).
    var isChromaPair: Bool { channels == 2 && (pixelStride == 4 || pixelStride == 2) }

    /// Source columns a span must keep free on the right for the bilinear
    /// vector kernels, which read 4 bytes from each tap (or 8 from a tap row's
    /// first tap, for RGB): past the sample's last channel for RGB (the spare
    /// column keeps all 8 of those bytes inside the row), for UYVY luma (Y at
    /// byte 1 of its pair) and for NV12 chroma (2-byte samples).
    var spareColumns: Int {
        if isPacked3 { return 1 }
        if isLuma422 { return offsets[0] > 0 ? 1 : 0 }
        if isChromaPair && pixelStride == 2 { return 1 }
        return 0
    }
    /// Bytes the bilinear vector kernels (portable and AVX2) may read in one tap row, from the byte
    /// offset of the sample's first tap: 4 bytes from the tap (gray), from its luma byte
    /// (YUYV / UYVY luma), or from each of the two taps (the 4-byte-load layouts); 8 for RGB,
    /// whose AVX2 kernel may read a tap and its neighbour with one 8-byte load (the spare
    /// column already keeps those bytes inside the row: 8 is the honest bound, not the guard).
    var vectorReadBytes: Int {
        if isGray { return 4 }
        if isLuma422 { return offsets[0] + 4 }
        if isPacked3 { return 8 }
        if isChromaPair || isPacked4 { return pixelStride + 4 }
        return 2 * pixelStride
    }
    /// True for a plain 8-bit gray plane.
    var isGray: Bool { pixelStride == 1 && channels == 1 }
}
