/// Small vector helpers on the standard library's SIMD types.

/// The cross product `a × b`.
@inlinable
public func cross(_ a: SIMD3<Double>, _ b: SIMD3<Double>) -> SIMD3<Double> {
    SIMD3(a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x)
}

/// The dot product.
@inlinable
public func dot<V: SIMD>(_ a: V, _ b: V) -> V.Scalar where V.Scalar: FloatingPoint {
    (a * b).sum()
}

/// The Euclidean length.
@inlinable
public func length<V: SIMD>(_ v: V) -> V.Scalar where V.Scalar: FloatingPoint {
    (v * v).sum().squareRoot()
}

/// `v` scaled to unit length; a zero vector stays zero.
@inlinable
public func normalize<V: SIMD>(_ v: V) -> V where V.Scalar: FloatingPoint {
    let n = length(v)
    return n > 0 ? v / n : v
}

extension SIMD3 where Scalar == Double {
    /// The first two components divided by the third: the pinhole projection of
    /// a direction onto the plane z = 1.
    @inlinable
    public var dehomogenized: SIMD2<Double> { SIMD2(x / z, y / z) }
}

extension SIMD2 where Scalar == Double {
    /// `(x, y, 1)`.
    @inlinable
    public var homogeneous: SIMD3<Double> { SIMD3(x, y, 1) }
}

/// Decodes a matrix stored as a flat array of `count` numbers in row-major
/// order, with an error that says what was expected.
func decodeRowMajor(from decoder: Decoder, count: Int, shape: String) throws -> [Double] {
    var container = try decoder.unkeyedContainer()
    var values: [Double] = []
    while !container.isAtEnd { values.append(try container.decode(Double.self)) }
    guard values.count == count else {
        throw DecodingError.dataCorrupted(
            .init(codingPath: decoder.codingPath,
                  debugDescription: "a \(shape) matrix needs \(count) numbers in row-major order, found \(values.count)"))
    }
    return values
}
