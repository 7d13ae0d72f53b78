// swift-tools-version:6.0
import PackageDescription

/// C libraries come from Debian's -dev packages. The shim compiles against their
/// headers but loads them with dlopen only when a command needs them, so a cache
/// hit never pays for libcurl's start-up (several milliseconds of dynamic
/// linking). These targets link them directly, for the tests that check the
/// shim's table against the real libraries.
let systemLibraries: [Target] = [
    .systemLibrary(name: "CCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),
    .systemLibrary(name: "COpenSSL", pkgConfig: "libcrypto", providers: [.apt(["libssl-dev"])]),
    .systemLibrary(name: "CPNG", pkgConfig: "libpng", providers: [.apt(["libpng-dev"])]),
    .systemLibrary(name: "CJPEG", pkgConfig: "libjpeg", providers: [.apt(["libjpeg-dev"])]),
    .systemLibrary(name: "CWebP", pkgConfig: "libwebpdemux", providers: [.apt(["libwebp-dev"])]),
    .systemLibrary(name: "CGIF", pkgConfig: "libgif", providers: [.apt(["libgif-dev"])]),
]

let package = Package(
    name: "imgcache",
    products: [
        .executable(name: "imgcache", targets: ["imgcache"]),
        .library(name: "ImgCacheCore", targets: ["ImgCacheCore"]),
    ],
    targets: systemLibraries + [
        .target(name: "CImgCacheShims", linkerSettings: [.linkedLibrary("dl")]),
        .target(name: "ImgCacheCore", dependencies: ["CImgCacheShims"]),
        .target(name: "ImgCacheCLI", dependencies: ["ImgCacheCore"]),
        .executableTarget(name: "imgcache", dependencies: ["ImgCacheCLI", "ImgCacheCore"]),
        // The codec work alone, over a folder of images, for `make bench`.
        .executableTarget(name: "imgcache-codec-bench", dependencies: ["ImgCacheCore"]),
        .testTarget(name: "ImgCacheCoreTests", dependencies: ["ImgCacheCore"]),
        .testTarget(name: "ImgCacheCLITests", dependencies: ["ImgCacheCLI", "ImgCacheCore"]),
        .testTarget(name: "EndToEndTests", dependencies: ["ImgCacheCore"]),
        .testTarget(
            name: "SystemLibraryTests",
            dependencies: ["CImgCacheShims", "ImgCacheCore", "CCurl", "COpenSSL", "CPNG", "CJPEG", "CWebP", "CGIF"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
