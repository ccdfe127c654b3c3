import Foundation
import ParallaxCapture
import ParallaxGeometry
import ParallaxImage
import ParallaxTestSupport
import Testing
@testable import parallax

/// `capture --output NAME.mcap`: a ROS 2 bag in one MCAP file. (`make test-interop` has
/// PyPI's readers check the same files independently.)
@Suite("parallax capture to a ROS 2 bag (.mcap)")
struct BagCaptureTests {
    /// Every message of `path`, decoded: images (raw or compressed) and camera info by topic.
    static func read(_ path: String) throws -> (file: MCAPFile, images: [String: [ROS2.Image]], info: [String: [ROS2.CameraInfo]],
                                                 compressed: [String: [ROS2.CompressedImage]]) {
        let file = try MCAPFile(path: path)
        var images: [String: [ROS2.Image]] = [:], info: [String: [ROS2.CameraInfo]] = [:]
        var compressed: [String: [ROS2.CompressedImage]] = [:]
        try file.forEachMessage { message in
            let type = file.schemas[message.channel.schemaID]?.name
            switch type {
            case "sensor_msgs/msg/Image": images[message.channel.topic, default: []].append(try ROS2.Image(cdr: message.data))
            case "sensor_msgs/msg/CameraInfo": info[message.channel.topic, default: []].append(try ROS2.CameraInfo(cdr: message.data))
            case "sensor_msgs/msg/CompressedImage":
                compressed[message.channel.topic, default: []].append(try ROS2.CompressedImage(cdr: message.data))
            default: Issue.record("a message of type \(type ?? "none") on \(message.channel.topic)")
            }
            #expect(message.logTime == message.publishTime)
        }
        return (file, images, info, compressed)
    }

    /// The simulated rig renders the same views at every frame number, so the bag's images
    /// are the EuRoC recording's pixels, frame for frame. The views being alike, order is
    /// proven by the stamps each message carries: rising and all different, so a reader that
    /// gave the first message each time, or any message twice, would fail.
    @Test("the simulated rig to a .mcap: two Image topics, a pair per frame asked for, the pixels of an EuRoC recording of the same frames")
    func simulatedRigToBag() throws {
        let dir = try ParallaxCLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let bag = dir.appendingPathComponent("rec.mcap").path
        let common = ["capture", "--simulated", "--size", "160x120", "--frames", "4"]
        let run = try ParallaxCLI.run(common + ["--output", bag])
        #expect(run.status == 0 && run.stdout.contains("recorded to \(bag) (a ROS 2 bag"), "\(run.stderr)")
        let folder = try ParallaxCLI.run(common + ["--output", dir.appendingPathComponent("euroc").path])
        #expect(folder.status == 0, "\(folder.stderr)")

        let (file, images, info, compressed) = try Self.read(bag)
        #expect(file.profile == "ros2" && file.isComplete)
        #expect(Set(images.keys) == ["/stereo/left/image_raw", "/stereo/right/image_raw"] && compressed.isEmpty)
        // The rig's calibration is known: each raw image has its camera info, the rig's K and D.
        let rig = SimulatedStereoRig.example(size: ImageSize(width: 160, height: 120)).calibration
        #expect(Set(info.keys) == ["/stereo/left/camera_info", "/stereo/right/camera_info"])
        for side in StereoSide.allCases {
            let infos = info["/stereo/\(side)/camera_info"] ?? []
            #expect(infos.count == 4 && infos.map(\.header) == (images["/stereo/\(side)/image_raw"] ?? []).map(\.header))
            #expect(infos.allSatisfy { $0.k == rig[side].intrinsics.matrix.rowMajor && $0.width == 160 && $0.height == 120 })
        }
        #expect(file.statistics?.messageCount == 16)
        for (topic, camera) in [("/stereo/left/image_raw", "cam0"), ("/stereo/right/image_raw", "cam1")] {
            let bagImages = try #require(images[topic])
            #expect(bagImages.count == 4)
            let pngFolder = dir.appendingPathComponent("euroc/\(camera)/data")
            let pngs = try FileManager.default.contentsOfDirectory(atPath: pngFolder.path).sorted()
                .map { try ImageBuffer(contentsOfFile: pngFolder.appendingPathComponent($0).path) }
            for image in bagImages {
                #expect(image.encoding == "mono8" && image.width == 160 && image.height == 120 && image.step == 160)
            }
            #expect(pngs.count == 4 && bagImages.map(\.data) == pngs.map(\.bytes), "\(topic): not the EuRoC recording's frames")
            // Stamps: the frames' timestamps, rising.
            let stamps = bagImages.map(\.header.stamp.nanoseconds)
            #expect(stamps == stamps.sorted() && Set(stamps).count == stamps.count)
        }
    }

    @Test("with --calibration: image_rect topics and each side's camera info, K and D the calibration's, P's baseline in metres")
    func calibrationAddsCameraInfo() throws {
        let size = ImageSize(width: 160, height: 120)
        let calibration = SimulatedStereoRig.example(size: size).calibration
        let dir = try ParallaxCLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("rig.json").path
        try FileAccess.writeAtomically(calibration.jsonText(), toPath: file)
        let bag = dir.appendingPathComponent("rect.mcap").path
        let run = try ParallaxCLI.run(["capture", "--simulated", "--size", "160x120", "--frames", "3", "--calibration", file, "--output", bag])
        #expect(run.status == 0, "\(run.stderr)")
        let (_, images, info, _) = try Self.read(bag)
        #expect(Set(images.keys) == ["/stereo/left/image_rect", "/stereo/right/image_rect"])
        #expect(Set(info.keys) == ["/stereo/left/camera_info", "/stereo/right/camera_info"])
        for side in StereoSide.allCases {
            let infos = try #require(info["/stereo/\(side)/camera_info"])
            let rect = try #require(images["/stereo/\(side)/image_rect"])
            #expect(infos.count == 3 && rect.count == 3)
            #expect(infos.map(\.header) == rect.map(\.header), "each camera info is stamped like its image")
            let camera = calibration[side]
            for message in infos {  // every message, not only the first: the same camera throughout
                #expect(message.k == camera.intrinsics.matrix.rowMajor && message.width == 160 && message.height == 120)
                #expect(Array(message.d.prefix(camera.distortion.coefficients.count)) == camera.distortion.coefficients)
                #expect(message.d.dropFirst(camera.distortion.coefficients.count).allSatisfy { $0 == 0 })
                #expect(message.r == infos[0].r && message.p == infos[0].p)
            }
        }
        // R and P checked against the geometry, not against the code that wrote them. A point X
        // in the left camera's frame is R·X + t in the right's (the calibration's extrinsics);
        // R1 and R2 turn each camera's frame into its rectified one. Rectified cameras look the
        // same way, so R2·R = R1, and stand apart along x alone, so R2·t = (−baseline, 0, 0).
        // Rounding: each entry is a sum of three products of numbers at most 1 (rotations) or
        // the baseline (t), so a few 1e-16 relative; 1e-12 leaves the rectification's own
        // arithmetic (a Rodrigues rotation, a cross product, normalisations) room.
        let left = try #require(info["/stereo/left/camera_info"]?.first), right = try #require(info["/stereo/right/camera_info"]?.first)
        let r1 = Matrix3x3(rowMajor: left.r), r2 = Matrix3x3(rowMajor: right.r)
        for r in [r1, r2] {
            #expect((r * r.transposed - .identity).frobeniusNorm < 1e-12 && abs(r.determinant - 1) < 1e-12, "\(r) is no rotation")
        }
        #expect((r2 * calibration.extrinsics.rotation - r1).frobeniusNorm < 1e-12, "the rectified cameras do not look the same way")
        let apart = r2 * calibration.extrinsics.translation
        #expect(abs(apart.x + calibration.baseline) <= 1e-12 * calibration.baseline && abs(apart.y) <= 1e-12 * calibration.baseline
                && abs(apart.z) <= 1e-12 * calibration.baseline, "rectified, the cameras are \(apart) apart")
        // P = [f′ 0 c′x Tx; 0 f′ c′y 0; 0 0 1 0]: one focal length and row centre for both,
        // Tx = 0 on the left and f′·(R2·t)x = −f′·baseline on the right (the calibration is in
        // metres, ROS's unit).
        let (p1, p2) = (left.p, right.p)
        #expect(p1[0] == p2[0] && p1[5] == p2[5] && p1[0] == p1[5] && p1[6] == p2[6] && p1[0] > 0)
        #expect([p1[1], p1[3], p1[4], p1[7], p1[8], p1[9], p1[11], p2[1], p2[4], p2[7], p2[8], p2[9], p2[11]].allSatisfy { $0 == 0 })
        #expect(p1[10] == 1 && p2[10] == 1)
        let baseline = -p2[3] / p2[0]
        #expect(abs(baseline - calibration.baseline) <= 1e-12 * calibration.baseline, "baseline \(baseline), calibration's \(calibration.baseline)")
    }

    /// ParallaxCapture.md: the bag "appears when the recording ends, Ctrl-C included". A real
    /// SIGINT to a bag recording in progress: the command stops as after its own end (exit 0),
    /// and `rec.mcap` is a whole MCAP file (summary and footer written) of whole pairs, as many
    /// left images as right, in time order; no staging file is left beside it.
    @Test("Ctrl-C (SIGINT) during capture to a .mcap leaves a whole bag of the pairs taken, and no staging file")
    func interruptedBagIsWhole() throws {
        let dir = try ParallaxCLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let bag = dir.appendingPathComponent("rec.mcap").path
        let process = try ParallaxCLI.launch(["capture", "--simulated", "--frames", "1000000", "--size", "160x120", "--output", bag])
        // Interrupted mid-recording: once what is staged beside the bag holds a dozen pairs' pixels.
        func staged() -> Int {
            ((try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? [])
                .compactMap { try? FileManager.default.attributesOfItem(atPath: dir.path + "/" + $0)[.size] as? Int }.reduce(0, +)
        }
        let started = Date(timeIntervalSinceNow: 60)
        while staged() < 24 * 160 * 120 && Date() < started && process.isRunning { usleep(20_000) }
        try #require(process.isRunning, "capture ended before it was interrupted (status \(process.terminationStatus))")
        ParallaxCLI.interrupt(process)
        #expect(process.terminationReason == .exit && process.terminationStatus == 0, "status \(process.terminationStatus)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path) == ["rec.mcap"])
        let (file, images, _, _) = try Self.read(bag)
        #expect(file.isComplete)
        let left = images["/stereo/left/image_raw"] ?? [], right = images["/stereo/right/image_raw"] ?? []
        #expect(left.count == right.count && left.count >= 12, "\(left.count) left and \(right.count) right images")
        let stamps = left.map(\.header.stamp.nanoseconds)
        #expect(stamps == stamps.sorted() && Set(stamps).count == stamps.count)
        #expect(file.statistics.map { Int($0.messageCount) } == 2 * (left.count + right.count), "each image and its camera info")
    }

    @Test("an existing bag is kept unless --overwrite; zstd chunks on request; --independent has no bag; a folder named .mcap is refused")
    func refusals() throws {
        let dir = try ParallaxCLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let bag = dir.appendingPathComponent("old.mcap").path
        try FileAccess.writeAtomically("an older file\n", toPath: bag)
        let common = ["capture", "--simulated", "--size", "160x120", "--frames", "2"]
        let kept = try ParallaxCLI.run(common + ["--output", bag])
        #expect(kept.status != 0 && kept.stderr.contains("already exists"), "\(kept.stderr)")
        #expect(try String(contentsOfFile: bag, encoding: .utf8) == "an older file\n")
        let replaced = try ParallaxCLI.run(common + ["--output", bag, "--overwrite"])
        #expect(replaced.status == 0, "\(replaced.stderr)")
        #expect(try MCAPFile(path: bag).statistics?.messageCount == 8, "2 pairs: 4 images, each with its camera info")
        // zstd chunks: the same messages, read back; the option is for bags only.
        let packed = dir.appendingPathComponent("packed.mcap").path
        let zstd = try ParallaxCLI.run(common + ["--bag-compression", "zstd", "--output", packed])
        #expect(zstd.status == 0, "\(zstd.stderr)")
        let (_, images, _, _) = try Self.read(packed)
        #expect(images.values.map(\.count).sorted() == [2, 2])
        let notBag = try ParallaxCLI.run(common + ["--bag-compression", "zstd", "--output", dir.appendingPathComponent("folder").path])
        #expect(notBag.status != 0 && notBag.stderr.contains("--bag-compression and --frame-ids are for a ROS 2 bag"), "\(notBag.stderr)")
        let independent = try ParallaxCLI.run(common + ["--independent", "--output", dir.appendingPathComponent("i.mcap").path])
        #expect(independent.status != 0 && independent.stderr.contains("--independent"), "\(independent.stderr)")
        let folder = dir.appendingPathComponent("folder.mcap")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let refused = try ParallaxCLI.run(common + ["--output", folder.path])
        #expect(refused.status != 0 && refused.stderr.contains("is a folder"), "\(refused.stderr)")
    }

    /// `--bag`: what `ros2 bag record -s mcap` leaves, a folder with `metadata.yaml` and
    /// `NAME_0.mcap`. (`make test-interop` has PyPI's rosbags open it.)
    @Test("--bag: a rosbag2 folder whose metadata.yaml lists the MCAP file's topics, types, counts, QoS and times; whole or absent; replaced only if a bag and asked; played back")
    func rosbag2Folder() throws {
        let dir = try ParallaxCLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let bag = dir.appendingPathComponent("rec_bag").path
        let common = ["capture", "--simulated", "--size", "160x120", "--frames", "3", "--bag"]
        let run = try ParallaxCLI.run(common + ["--output", bag])
        #expect(run.status == 0 && run.stdout.contains("recorded to \(bag) (a rosbag2 folder: metadata.yaml and rec_bag_0.mcap"),
                "\(run.stdout) \(run.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: bag).sorted() == ["metadata.yaml", "rec_bag_0.mcap"])
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path) == ["rec_bag"])  // no staging left
        let (file, images, _, _) = try Self.read(bag + "/rec_bag_0.mcap")
        #expect(file.isComplete && images.values.map(\.count) == [3, 3])
        // Every channel offers the QoS the ros2 profile asks channels to record.
        #expect(file.channels.values.allSatisfy { $0.metadata["offered_qos_profiles"] == ROS2.offeredQoSProfiles })
        let metadata = try String(contentsOfFile: bag + "/metadata.yaml", encoding: .utf8)
        let stamps = images.values.flatMap { $0.map(\.header.stamp.nanoseconds) }
        let first = try #require(stamps.min()), last = try #require(stamps.max())
        for line in ["  version: 5", "  storage_identifier: mcap", "  message_count: 12", "    nanoseconds: \(last - first)",
                     "    nanoseconds_since_epoch: \(first)", "        name: /stereo/left/image_raw",
                     "        name: /stereo/right/image_raw", "        type: sensor_msgs/msg/Image", "        serialization_format: cdr",
                     "      message_count: 3", "    - rec_bag_0.mcap", "        offered_qos_profiles: \"- history: 1\\n  depth: 10\\n"] {
            #expect(metadata.contains(line + (line.hasSuffix("\\n") ? "" : "\n")), "metadata.yaml has no line \(line):\n\(metadata)")
        }
        // Played back as a recording: the folder, as rosbag2 tools take it.
        let played = try ParallaxCLI.run(["stream", "--recording", bag, "--raw", "--json"], timeout: 120)
        let summary = played.stdout.split(separator: "\n").last.flatMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        #expect(played.status == 0 && summary?["pairs"] as? Int == 3, "\(played.stdout) \(played.stderr)")

        // An older bag stays unless --overwrite; a folder that is no bag is never replaced.
        let kept = try ParallaxCLI.run(common + ["--frames", "2", "--output", bag])
        #expect(kept.status != 0 && kept.stderr.contains("not empty"), "\(kept.stderr)")
        #expect(try MCAPFile(path: bag + "/rec_bag_0.mcap").statistics?.messageCount == 12)
        let replaced = try ParallaxCLI.run(["capture", "--simulated", "--size", "160x120", "--frames", "2", "--bag", "--overwrite",
                                            "--output", bag])
        #expect(replaced.status == 0, "\(replaced.stderr)")
        #expect(try MCAPFile(path: bag + "/rec_bag_0.mcap").statistics?.messageCount == 8)
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path) == ["rec_bag"])
        let mine = dir.appendingPathComponent("mine")
        try FileManager.default.createDirectory(at: mine, withIntermediateDirectories: true)
        try FileAccess.writeAtomically("notes\n", toPath: mine.appendingPathComponent("notes.txt").path)
        let notABag = try ParallaxCLI.run(common + ["--overwrite", "--output", mine.path])
        #expect(notABag.status != 0 && notABag.stderr.contains("is not a rosbag2 bag (no metadata.yaml)"), "\(notABag.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: mine.path) == ["notes.txt"])
        // A run that fails (its time is up before its pairs) leaves nothing, and no staging.
        let failed = try ParallaxCLI.run(common + ["--frames", "100000", "--timeout", "2s", "--output", dir.appendingPathComponent("cut").path])
        #expect(failed.status != 0, "\(failed.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path).sorted() == ["mine", "rec_bag"])
        // --bag is a folder; NAME.mcap is one file.
        let both = try ParallaxCLI.run(common + ["--output", dir.appendingPathComponent("x.mcap").path])
        #expect(both.status != 0 && both.stderr.contains("--bag writes a rosbag2 folder"), "\(both.stderr)")
    }

    @Test("stream --record: the pairs handed out, as a bag (rectified, with camera info), a rosbag2 folder or an EuRoC folder with sensor.yaml")
    func streamRecords() throws {
        let dir = try ParallaxCLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let common = ["stream", "--simulated", "--size", "160x120", "--frames", "4", "--record"]
        let bag = dir.appendingPathComponent("s.mcap").path
        let run = try ParallaxCLI.run(common + [bag])
        #expect(run.status == 0, "\(run.stderr)")
        // The simulated rig's pairs are rectified with its own calibration: image_rect and camera_info.
        let (_, images, info, _) = try Self.read(bag)
        #expect(Set(images.keys) == ["/stereo/left/image_rect", "/stereo/right/image_rect"] && images.values.map(\.count) == [4, 4])
        #expect(info.values.map(\.count) == [4, 4])
        #expect(images.values.allSatisfy { $0.allSatisfy { ["stereo_left", "stereo_right"].contains($0.header.frameID) } })
        #expect(images["/stereo/left/image_rect"]?.first?.header.frameID == "stereo_left")
        let folder = dir.appendingPathComponent("s_bag").path
        #expect(try ParallaxCLI.run(common + [folder, "--bag", "--raw", "--frame-ids", "cam_l_optical,cam_r_optical"]).status == 0)
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder).sorted() == ["metadata.yaml", "s_bag_0.mcap"])
        let named = try Self.read(folder + "/s_bag_0.mcap").images
        #expect(named["/stereo/left/image_raw"]?.allSatisfy { $0.header.frameID == "cam_l_optical" } == true)
        #expect(named["/stereo/right/image_raw"]?.allSatisfy { $0.header.frameID == "cam_r_optical" } == true)
        let badIDs = try ParallaxCLI.run(common + [dir.appendingPathComponent("x.mcap").path, "--frame-ids", "only_one"])
        #expect(badIDs.status == 64 && badIDs.stderr.contains("--frame-ids takes two frame names"), "\(badIDs.stderr)")
        let notABag = try ParallaxCLI.run(common + [dir.appendingPathComponent("x").path, "--frame-ids", "a,b"])
        #expect(notABag.status == 64 && notABag.stderr.contains("are for a ROS 2 bag"), "\(notABag.stderr)")
        let euroc = dir.appendingPathComponent("s_euroc").path
        #expect(try ParallaxCLI.run(common + [euroc]).status == 0)
        for camera in ["cam0", "cam1"] {
            #expect(try FileManager.default.contentsOfDirectory(atPath: euroc + "/\(camera)/data").count == 4)
            #expect(FileManager.default.fileExists(atPath: euroc + "/\(camera)/sensor.yaml"))
        }
        // A recording that exists is kept; the options that say how to record need --record.
        let again = try ParallaxCLI.run(common + [bag])
        #expect(again.status != 0 && again.stderr.contains("already exists"), "\(again.stderr)")
        // What is played is never recorded over.
        let over = try ParallaxCLI.run(["stream", "--recording", euroc, "--raw", "--record", euroc, "--overwrite"])
        #expect(over.status != 0 && over.stderr.contains("overlap"), "\(over.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: euroc + "/cam0/data").count == 4)
        let stray = try ParallaxCLI.run(["stream", "--simulated", "--frames", "2", "--bag"])
        #expect(stray.status == 64 && stray.stderr.contains("give --record PATH"), "\(stray.stderr)")
    }

    /// The virtual webcams send one JPEG a side (the simulated rig's view, encoded once as
    /// their pictures are): every message carries those bytes, not a decoded and re-encoded
    /// image, which would differ.
    @Test("virtual MJPEG webcams to a .mcap: the JPEG bytes as they came, byte for byte, as CompressedImage on image_raw/compressed")
    func mjpegAsItCame() throws {
        let dir = try ParallaxCLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let bag = dir.appendingPathComponent("mjpeg.mcap").path
        let run = try ParallaxCLI.run(["capture", "--virtual", "--format", "640x480@30:MJPG", "--frames", "3", "--output", bag])
        #expect(run.status == 0, "\(run.stderr)")
        let (_, images, _, compressed) = try Self.read(bag)
        #expect(images.isEmpty && Set(compressed.keys) == ["/stereo/left/image_raw/compressed", "/stereo/right/image_raw/compressed"])
        let size = ImageSize(width: 640, height: 480)
        for side in StereoSide.allCases {
            let sent = try #require(VirtualPictures { size in try? SimulatedStereoRig.example(size: size).render(side, format: .rgb8) }
                .jpeg(for: size))
            let messages = try #require(compressed["/stereo/\(side)/image_raw/compressed"])
            #expect(messages.count == 3)
            for message in messages {
                #expect(message.format == "jpeg" && message.data == sent, "\(side): \(message.data.count) bytes, not the \(sent.count) sent")
            }
        }
    }

    /// A conversion takes the whole recording: 90 pairs (more than `--frames`' default of 60)
    /// from a bag and from an EuRoC folder into a bag, the same stamps in the same order;
    /// `--frames` still takes that many, and `--timeout` cutting a recording short is said
    /// and fails. Mutation: the old default (60 of 90, exit 0) fails it.
    @Test("capture --recording converts the whole recording unless --frames says otherwise: a bag and an EuRoC folder, 90 pairs each")
    func conversionTakesTheWholeRecording() throws {
        let dir = try ParallaxCLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let common = ["capture", "--simulated", "--board-sweep", "--size", "64x48", "--frames", "90", "--output"]
        for name in ["src.mcap", "src"] {
            let made = try ParallaxCLI.run(common + [dir.appendingPathComponent(name).path])
            try #require(made.status == 0, "\(made.stderr)")
        }
        let (_, source, _, _) = try Self.read(dir.appendingPathComponent("src.mcap").path)
        let sourceStamps = (source["/stereo/left/image_raw"] ?? []).map(\.header.stamp.nanoseconds)
        #expect(sourceStamps.count == 90)
        let csv = try String(contentsOf: dir.appendingPathComponent("src/cam0/data.csv"), encoding: .utf8)
        let folderStamps = csv.split(separator: "\n").filter { !$0.hasPrefix("#") }.compactMap { Int64($0.split(separator: ",")[0]) }
        #expect(folderStamps.count == 90)
        for (input, output, stamps) in [("src.mcap", "from-bag.mcap", sourceStamps), ("src", "from-euroc.mcap", folderStamps)] {
            let run = try ParallaxCLI.run(["capture", "--recording", dir.appendingPathComponent(input).path,
                                           "--output", dir.appendingPathComponent(output).path])
            #expect(run.status == 0 && run.stdout.contains("90 pairs written"), "\(input): \(run.stdout) \(run.stderr)")
            let (_, images, _, _) = try Self.read(dir.appendingPathComponent(output).path)
            #expect(images.values.map(\.count) == [90, 90], "\(input)")
            #expect((images["/stereo/left/image_raw"] ?? []).map(\.header.stamp.nanoseconds) == stamps, "\(input): other stamps")
            // Frame for frame: each converted image is its source's, index by index (the
            // board sweep's views differ from frame to frame, so another frame's pixels fail).
            if input == "src.mcap" {
                for topic in ["/stereo/left/image_raw", "/stereo/right/image_raw"] {
                    let (played, recorded) = (images[topic] ?? [], source[topic] ?? [])
                    #expect(Set(recorded.map(\.data)).count > 1, "\(topic): the source's frames are all alike")
                    for (k, (a, b)) in zip(played, recorded).enumerated() where a.data != b.data {
                        Issue.record("\(topic) image \(k): not the source's pixels")
                        break
                    }
                }
            }
        }
        let some = try ParallaxCLI.run(["capture", "--recording", dir.appendingPathComponent("src.mcap").path, "--frames", "20",
                                        "--output", dir.appendingPathComponent("some.mcap").path])
        #expect(some.status == 0 && some.stdout.contains("20 pairs written"), "\(some.stdout) \(some.stderr)")
        // Played at its own pace (3 s), with a 1 s timeout: the timeout is said, status 1 (it
        // was an exit 0, a third of the way through, before).
        let sourceBag = dir.appendingPathComponent("src.mcap").path
        let streamed = try ParallaxCLI.run(["stream", "--recording", sourceBag, "--real-time", "--timeout", "1s"])
        #expect(streamed.status == 1 && streamed.stderr.contains("timed out after 1 s (--timeout)")
                && streamed.stderr.contains("before its end"), "\(streamed.stdout) \(streamed.stderr)")
        let converted = try ParallaxCLI.run(["capture", "--recording", sourceBag, "--real-time", "--timeout", "1s",
                                             "--output", dir.appendingPathComponent("cut.mcap").path])
        #expect(converted.status == 1 && converted.stderr.contains("before the end of --recording: timed out after 1"),
                "\(converted.stdout) \(converted.stderr)")
    }

    @Test("stream --recording plays a bag (and an EuRoC folder) back: every pair, the topics found or named, options it cannot honour refused")
    func streamPlaysRecordings() throws {
        let dir = try ParallaxCLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let bag = dir.appendingPathComponent("rec.mcap").path
        let folder = dir.appendingPathComponent("euroc").path
        for output in [bag, folder] {
            let run = try ParallaxCLI.run(["capture", "--simulated", "--size", "160x120", "--frames", "6", "--output", output])
            #expect(run.status == 0, "\(run.stderr)")
        }
        func pairs(_ arguments: [String]) throws -> (status: Int32, pairs: Int?, stderr: String) {
            let run = try ParallaxCLI.run(["stream", "--raw", "--json"] + arguments)
            let json = run.stdout.split(separator: "\n").last.flatMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
            return (run.status, json?["pairs"] as? Int, run.stderr)
        }
        // Every pair recorded, whether the topics are found (exactly two image topics) or named.
        for arguments in [["--recording", bag], ["--recording", bag, "--left-topic", "/stereo/left/image_raw",
                                                 "--right-topic", "/stereo/right/image_raw"], ["--recording", folder]] {
            let played = try pairs(arguments)
            #expect(played.status == 0 && played.pairs == 6, "\(arguments): \(played.stderr)")
        }
        // capture converts a bag into an EuRoC folder (its help says so): every pair, once.
        let converted = try ParallaxCLI.run(["capture", "--recording", bag, "--frames", "6", "--output",
                                             dir.appendingPathComponent("converted").path])
        #expect(converted.status == 0, "\(converted.stderr)")
        // Frame for frame: the folder's images are the bag's, in the bag's order.
        let recorded = try Self.read(bag).images
        for (camera, topic) in [("cam0", "/stereo/left/image_raw"), ("cam1", "/stereo/right/image_raw")] {
            let data = dir.appendingPathComponent("converted/\(camera)/data")
            let names = try FileManager.default.contentsOfDirectory(atPath: data.path).sorted()
            #expect(names.count == 6, "\(camera): \(names)")
            let played = try names.map { try ImageBuffer(contentsOfFile: data.appendingPathComponent($0).path).bytes }
            let written = try #require(recorded[topic])
            #expect(played == written.map(\.data), "\(camera): not the bag's pixels")
            // The simulated views are alike frame to frame: the order is the stamps'. EuRoC names
            // each image by its stamp in nanoseconds, so the k-th name is the bag's k-th stamp.
            let stamps = written.map(\.header.stamp.nanoseconds)
            #expect(names == stamps.map { "\($0).png" } && Set(stamps).count == 6, "\(camera): \(names) for the bag's stamps \(stamps)")
        }
        // Asked for more pairs than it holds: the shortfall is an error, as with cameras.
        let more = try pairs(["--recording", bag, "--frames", "10"])
        #expect(more.status == 1 && more.stderr.contains("after 6 of 10 pairs"), "\(more.stderr)")
        // A topic the bag does not have is named, with the image topics it has.
        let missing = try pairs(["--recording", bag, "--left-topic", "/stereo/left/depth", "--right-topic", "/stereo/right/image_raw"])
        #expect(missing.status != 0 && missing.stderr.contains("has no topic /stereo/left/depth"), "\(missing.stderr)")
        // One topic for both cameras: refused by name (its frames would pair with themselves).
        let same = try pairs(["--recording", bag, "--left-topic", "/stereo/right/image_raw", "--right-topic", "/stereo/right/image_raw"])
        #expect(same.status != 0 && same.stderr.contains("both cameras would be /stereo/right/image_raw"), "\(same.stderr)")
        let sameDefault = try pairs(["--recording", bag, "--left-topic", "/stereo/right/image_raw"])
        #expect(sameDefault.status != 0 && sameDefault.stderr.contains("both cameras would be /stereo/right/image_raw"), "\(sameDefault.stderr)")
        let refused = try pairs(["--recording", bag, "--format", "160x120@30:GREY"])
        #expect(refused.status != 0 && refused.stderr.contains("--recording plays back the recorded format"), "\(refused.stderr)")
        let stray = try pairs(["--simulated", "--left-topic", "/a"])
        #expect(stray.status != 0 && stray.stderr.contains("--left-topic and --right-topic choose a bag's topics"), "\(stray.stderr)")
        let nothing = try pairs(["--recording", dir.appendingPathComponent("none.mcap").path])
        #expect(nothing.status != 0 && nothing.stderr.contains("no such file or folder"), "\(nothing.stderr)")
        // A file that is not MCAP is named with the reader's reason.
        let text = dir.appendingPathComponent("text.mcap").path
        try FileAccess.writeAtomically("not a bag\n", toPath: text)
        let notMCAP = try pairs(["--recording", text])
        #expect(notMCAP.status != 0 && notMCAP.stderr.contains("not an MCAP file") && notMCAP.stderr.contains("text.mcap"), "\(notMCAP.stderr)")
    }

    /// A bag whose left topic lies in four of its twelve messages (data shorter than height ×
    /// step, width 0, `mono16`, another size mid-stream) plays with each of them in the
    /// account as a loss with its reason, and the account balances: before, the four were
    /// skipped and counted nowhere (`left_frames` 8, `lost_by_camera` empty, for 12 images).
    @Test("stream --recording of a bag that lies: every message a frame or a loss with its reason")
    func lyingBagIsAccounted() throws {
        let dir = try ParallaxCLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("lies.mcap").path
        let writer = try MCAPWriter(path: path, profile: "ros2")
        let schema = try writer.addSchema(name: "sensor_msgs/msg/Image", encoding: "ros2msg",
                                          data: Array(ROS2.schemas["sensor_msgs/msg/Image"]!.utf8))
        let channels = PerSide(left: try writer.addChannel(schemaID: schema, topic: "/left/image", messageEncoding: "cdr"),
                               right: try writer.addChannel(schemaID: schema, topic: "/right/image", messageEncoding: "cdr"))
        func image(_ k: Int, width: UInt32 = 32, encoding: String = "mono8", dataCount: Int? = nil) -> ROS2.Image {
            let step = width * (encoding == "mono16" ? 2 : 1)
            return ROS2.Image(header: ROS2.Header(stamp: ROS2.Time(nanoseconds: Int64(k + 1) * 33_333_333), frameID: "cam"),
                              height: 24, width: width, encoding: encoding, step: step,
                              data: [UInt8](repeating: UInt8(k * 9), count: dataCount ?? Int(24 * step)))
        }
        let lies = [3: image(3, dataCount: 100), 5: image(5, width: 0), 7: image(7, encoding: "mono16"), 9: image(9, width: 16)]
        for k in 0..<12 {
            for side in StereoSide.allCases {
                let message = side == .left ? lies[k] ?? image(k) : image(k)
                try writer.addMessage(channel: channels[side], sequence: UInt32(k), logTime: UInt64(k + 1) * 33_333_333,
                                      publishTime: UInt64(k + 1) * 33_333_333, data: message.serialized())
            }
        }
        try writer.finish()
        let (json, result) = try StreamCommandTests.stream(["--recording", path, "--raw"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(StreamCommandTests.number(json, "pairs") == 8 && StreamCommandTests.number(json, "left_frames") == 8
                && StreamCommandTests.number(json, "right_frames") == 12, "\(json)")
        let lost = json["lost_by_camera"]?.object?["left"]?.object
        #expect(lost?["malformed_message"]?.number == 2 && lost?["unsupported_encoding"]?.number == 1
                && lost?["format_changed"]?.number == 1, "\(json)")
        // Each said as a device error, naming the file and the message.
        let messages = json["events"]?.array?.compactMap { $0.object?["message"]?.string } ?? []
        for k in lies.keys {
            #expect(messages.contains { $0.contains("lies.mcap") && $0.contains("message \(k):") }, "message \(k) is named: \(messages)")
        }
    }

    /// A zstd bomb: sixteen chunks that each decompress to 1 GiB (a message of zeros) from
    /// 32 KiB, built by hand as zstd frames of run-length blocks. Opening the bag reads every
    /// chunk; `--timeout 1s` counts from the start, so the opening stops at the chunk being
    /// decompressed when the time runs out, naming it, instead of running through all sixteen
    /// (and then through each again in playback: 13 s under `--timeout 5s` before).
    @Test("stream --recording of a zstd bomb stops within --timeout, naming the chunk it was decompressing")
    func zstdBombStopsAtTheTimeLimit() throws {
        let dir = try ParallaxCLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        func u16(_ v: UInt16) -> [UInt8] { withUnsafeBytes(of: v.littleEndian, Array.init) }
        func u32(_ v: UInt32) -> [UInt8] { withUnsafeBytes(of: v.littleEndian, Array.init) }
        func u64(_ v: UInt64) -> [UInt8] { withUnsafeBytes(of: v.littleEndian, Array.init) }
        func string(_ s: String) -> [UInt8] { u32(UInt32(s.utf8.count)) + Array(s.utf8) }
        func record(_ opcode: UInt8, _ content: [UInt8]) -> [UInt8] { [opcode] + u64(UInt64(content.count)) + content }
        // The chunk's records: one message on channel 1 whose data is zeros, 1 GiB in all.
        let size = 1 << 30
        let messageHead = [UInt8(0x05)] + u64(UInt64(size - 9)) + u16(1) + u32(0) + u64(1) + u64(1)
        // A zstd frame (RFC 8878): magic, a single-segment header with an 8-byte content size,
        // one raw block with the message's head, then run-length blocks of zeros (128 KiB each).
        var frame: [UInt8] = [0x28, 0xB5, 0x2F, 0xFD, 0xE0] + u64(UInt64(size))
        func block(last: Bool, type: UInt32, size: Int) -> [UInt8] {
            let header = (last ? 1 : 0) | type << 1 | UInt32(size) << 3
            return [UInt8(header & 0xFF), UInt8(header >> 8 & 0xFF), UInt8(header >> 16)]
        }
        frame += block(last: false, type: 0, size: messageHead.count) + messageHead
        var left = size - messageHead.count
        while left > 0 {
            let run = min(left, 128 << 10)
            left -= run
            frame += block(last: left == 0, type: 1, size: run) + [0]
        }
        let chunk = record(0x06, u64(1) + u64(1) + u64(UInt64(size)) + u32(0) + string("zstd") + u64(UInt64(frame.count)) + frame)
        let magic: [UInt8] = [0x89, 0x4D, 0x43, 0x41, 0x50, 0x30, 0x0D, 0x0A]
        let schemaText = Array(ROS2.schemas["sensor_msgs/msg/Image"]!.utf8)
        var file = magic + record(0x01, string("ros2") + string("bomb"))
            + record(0x03, u16(1) + string("sensor_msgs/msg/Image") + string("ros2msg") + u32(UInt32(schemaText.count)) + schemaText)
        for (id, topic) in [(UInt16(1), "/left/image"), (2, "/right/image")] {
            file += record(0x04, u16(id) + u16(1) + string(topic) + string("cdr") + u32(0))
        }
        var chunkOffsets: [Int] = []
        for _ in 0..<16 {
            chunkOffsets.append(file.count)
            file += chunk
        }
        file += record(0x0F, u32(0)) + record(0x02, u64(0) + u64(0) + u32(0)) + magic
        let path = dir.appendingPathComponent("bomb.mcap").path
        try Data(file).write(to: URL(fileURLWithPath: path))
        #expect(file.count < 600_000, "sixteen GiB in \(file.count) bytes")

        let run = try ParallaxCLI.run(["stream", "--recording", path, "--raw", "--timeout", "1s"], timeout: 60)
        #expect(run.status != 0)
        #expect(run.stderr.contains("bomb.mcap") && run.stderr.contains("the time limit ran out with a zstd chunk of 1073741824 bytes to decompress"),
                "\(run.stderr)")
        // It stopped at a chunk before the last: the time limit, not the end of the file, ended it.
        let named = chunkOffsets.filter { run.stderr.contains("byte \($0):") }
        #expect(named.count == 1 && named[0] < chunkOffsets[15], "chunks at \(chunkOffsets); \(run.stderr)")
    }
}
