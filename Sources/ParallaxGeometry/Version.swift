/// Parallax's release, shown by `parallax --version` and recorded in the files it writes'
/// provenance.
public enum ParallaxVersion {
    /// Semantic version of the library and command-line tool.
    public static let string = "0.1.0"
}
