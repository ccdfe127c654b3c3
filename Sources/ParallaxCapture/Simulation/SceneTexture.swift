/// How a flat surface of the simulated scene is painted, in its own plane
/// coordinates (u, v), which are lengths in the scene's unit (metres, say).
///
/// Every texture returns a level on the 0–255 scale. Textures with sharp
/// edges are *box-filtered* over the footprint the renderer passes in, so an
/// edge is anti-aliased exactly rather than by counting samples; smooth
/// textures are point-sampled.
public enum SceneTexture: Hashable, Sendable {
    /// One level everywhere.
    case uniform(Double)
    /// Squares of side `period`, `dark` on the square [0, period)² and its
    /// diagonal neighbours, `light` on the others.
    case checkerboard(period: Double, dark: Double, light: Double)
    /// Smooth random texture (two octaves of value noise on a lattice of
    /// `cellSize`), between `dark` and `light`. The same seed gives the same
    /// pattern, which stereo matching can lock onto.
    case valueNoise(cellSize: Double, seed: UInt64, dark: Double, light: Double)

    /// The mean level over the axis-aligned box `[u ± halfU] × [v ± halfV]`
    /// (point-sampled at (u, v) when both half-sizes are zero).
    @inlinable
    public func level(u: Double, v: Double, halfU: Double = 0, halfV: Double = 0) -> Double {
        switch self {
        case .uniform(let level):
            return level
        case .checkerboard(let period, let dark, let light):
            // c = +1 on dark squares, −1 on light ones, averaged over the box.
            let c = SquareWave.mean(from: u - halfU, to: u + halfU, period: period)
                * SquareWave.mean(from: v - halfV, to: v + halfV, period: period)
            return light + (dark - light) * (c + 1) / 2
        case .valueNoise(let cellSize, let seed, let dark, let light):
            let coarse = ValueNoise.sample(u / cellSize, v / cellSize, seed: seed)
            let fine = ValueNoise.sample(u * 3 / cellSize, v * 3 / cellSize, seed: seed &+ 0x9E37_79B9)
            return dark + (light - dark) * (0.7 * coarse + 0.3 * fine)
        }
    }
}

/// The ±1 square wave `q(x) = +1` where `floor(x / period)` is even, and its
/// mean over an interval, from the closed-form integral (a triangle wave).
///
/// The product of two such means is the exact box-filtered value of a
/// checkerboard, because the checkerboard `q(u)·q(v)` separates.
@usableFromInline
enum SquareWave {
    /// `q(x)`.
    @inlinable
    static func value(_ x: Double, period: Double) -> Double {
        let k = (x / period).rounded(.down)
        return k.truncatingRemainder(dividingBy: 2) == 0 ? 1 : -1
    }

    /// `∫₀ˣ q`: rises to `period` over the first square, falls back to 0 over the second.
    @inlinable
    static func integral(_ x: Double, period: Double) -> Double {
        let twice = 2 * period
        var m = x.truncatingRemainder(dividingBy: twice)
        if m < 0 { m += twice }
        return period - abs(m - period)
    }

    /// The mean of `q` over `[a, b]`; `q(a)` when the interval is empty.
    @inlinable
    static func mean(from a: Double, to b: Double, period: Double) -> Double {
        let width = b - a
        // Below a millionth of a square the difference of integrals loses its digits.
        guard width > period * 1e-6 else { return value((a + b) / 2, period: period) }
        return (integral(b, period: period) - integral(a, period: period)) / width
    }
}

/// Lattice value noise with smoothstep interpolation, in [0, 1].
@usableFromInline
enum ValueNoise {
    @inlinable
    static func sample(_ x: Double, _ y: Double, seed: UInt64) -> Double {
        let fx = x.rounded(.down), fy = y.rounded(.down)
        let tx = x - fx, ty = y - fy
        let ix = Int64(fx), iy = Int64(fy)
        let sx = tx * tx * (3 - 2 * tx), sy = ty * ty * (3 - 2 * ty)
        let a = lattice(ix, iy, seed), b = lattice(ix + 1, iy, seed)
        let c = lattice(ix, iy + 1, seed), d = lattice(ix + 1, iy + 1, seed)
        let top = a + (b - a) * sx, bottom = c + (d - c) * sx
        return top + (bottom - top) * sy
    }

    /// A pseudo-random value in [0, 1] for a lattice point (SplitMix64 finaliser).
    @inlinable
    static func lattice(_ i: Int64, _ j: Int64, _ seed: UInt64) -> Double {
        var z = seed &+ UInt64(bitPattern: i) &* 0x9E37_79B9_7F4A_7C15 &+ UInt64(bitPattern: j) &* 0xC2B2_AE3D_27D4_EB4F
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        z ^= z >> 31
        return Double(z >> 11) / Double(1 << 53)
    }
}
