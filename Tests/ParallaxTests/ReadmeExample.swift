import Parallax

func viewRig() async throws {
    let device = StereoDevice(left: try V4L2Camera(path: "/dev/video0"),
                              right: try V4L2Camera(path: "/dev/video2"))
    try device.configure(StereoConfiguration(format: CaptureFormat(parsing: "640x480@30:YUYV")!))
    let calibration = try CalibrationFile.load("rig.json").calibration  // JSON, OpenCV YAML or ROS
    let session = try StereoSession(device: device, calibration: calibration)
    try session.start()
    var delivered = 0
    for try await pair in session.pairs {
        // Rectified and matched: row y of the left image shows what row y of the right shows.
        guard let left = pair.left.image, let right = pair.right.image else { continue }
        print(pair.number, pair.skewNanoseconds, left.size, right.size)
        delivered += 1
        if delivered == 300 { break }  // 300 pairs delivered (pair.number counts dropped ones too)
    }
    session.stop()
    print(session.statistics.dropped(.left), session.statistics.dropped(.right))
}
