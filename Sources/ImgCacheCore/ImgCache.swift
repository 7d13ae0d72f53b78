/// Facts about this build of imgcache.
public enum ImgCache {
    /// The version, as `--version` and the User-Agent report it.
    public static let version = "0.1.0"
}
