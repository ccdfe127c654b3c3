// Elementary functions from the platform's C math library. ParallaxGeometry
// depends on nothing beyond the Swift standard library and libm, which every
// Swift program on Linux links anyway; Foundation is deliberately not used.

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

@usableFromInline @inline(__always) func _sin(_ x: Double) -> Double { sin(x) }
@usableFromInline @inline(__always) func _cos(_ x: Double) -> Double { cos(x) }
@usableFromInline @inline(__always) func _tan(_ x: Double) -> Double { tan(x) }
@usableFromInline @inline(__always) func _atan(_ x: Double) -> Double { atan(x) }
@usableFromInline @inline(__always) func _atan2(_ y: Double, _ x: Double) -> Double { atan2(y, x) }
@usableFromInline @inline(__always) func _acos(_ x: Double) -> Double { acos(x) }
@usableFromInline @inline(__always) func _floor(_ x: Double) -> Double { floor(x) }
@usableFromInline @inline(__always) func _ceil(_ x: Double) -> Double { ceil(x) }
