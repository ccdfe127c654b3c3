import CDepthKernels
import ParallaxImage

/// The C boundary of the matcher: the one place its buffers are handed to the kernels.
enum SemiGlobalKernels {
    /// What the two stages of one match share (read by both threads, written by neither).
    private struct Job {
        var work: UnsafeMutableRawPointer
        var level: Int32
        var left: parallax_sgm_luma
        var right: parallax_sgm_luma
        var fixedPoint: UnsafeMutablePointer<Int16>
        var values: UnsafeMutablePointer<Float>
        var stride: Int
    }

    /// Runs one match: on the caller alone, or its two stages on the pool's two threads.
    ///
    /// Bounds: `fixedPoint` and `values` hold width × height elements of the plan the work
    /// area was prepared with (the map was prepared to that size); the lumas describe images
    /// of that size that stay alive for the call (the caller's views).
    static func match(work: UnsafeMutableRawPointer, level: SIMDLevel, pool: WorkerPool?, left: parallax_sgm_luma,
                      right: parallax_sgm_luma, fixedPoint: UnsafeMutableBufferPointer<Int16>,
                      values: UnsafeMutableBufferPointer<Float>, width: Int) {
        guard let fixed = fixedPoint.baseAddress, let floats = values.baseAddress else { return }
        var job = Job(work: work, level: Int32(level.kernelLevelValue), left: left, right: right, fixedPoint: fixed,
                      values: floats, stride: width)
        guard let pool else {
            _ = parallax_sgm_match(work, job.level, 0, left, right, fixed, width, floats, width)
            return
        }
        parallax_sgm_begin(work)
        withUnsafePointer(to: &job) { context in
            pool.run(tasks: 2, context: UnsafeRawPointer(context)) { raw, task in
                let job = raw.assumingMemoryBound(to: Job.self).pointee
                _ = parallax_sgm_match(job.work, job.level, Int32(task + 1), job.left, job.right, job.fixedPoint,
                                       job.stride, job.values, job.stride)
            }
        }
    }
}
