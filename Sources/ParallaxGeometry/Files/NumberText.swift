/// Formatting numbers for YAML files (calibration files, EuRoC `sensor.yaml`): the shortest
/// text that reads back to the same double, always with a decimal point so YAML 1.1 readers
/// (PyYAML in ROS tools) see a float rather than a string (`1e-05` is a string to them,
/// `1.0e-05` a float).
package func yamlNumber(_ v: Double) -> String {
    var text = "\(v)"
    if !text.contains(".") && v.isFinite {
        if let e = text.firstIndex(of: "e") { text.insert(contentsOf: ".0", at: e) } else { text += ".0" }
    }
    return text
}

extension Duration {
    /// The duration in seconds.
    package var seconds: Double { Double(components.seconds) + Double(components.attoseconds) * 1e-18 }
}
