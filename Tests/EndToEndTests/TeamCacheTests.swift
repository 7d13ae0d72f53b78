import Foundation
import Testing

/// A cache a team shares: folders and files follow the umask (so `umask 002`
/// under a setgid group folder makes every member's entries the group's), a
/// `umask` setting as ccache has (`config --umask`, `IMGCACHE_UMASK`), and a
/// root imgcache makes under the user's own cache folder stays private.
@Suite final class TeamCacheTests: LoopbackCacheSuite {
    let work: TemporaryDirectory

    override init() throws {
        work = try TemporaryDirectory("imgcache-team")
        try super.init()
    }

    /// Runs `umask MASK; imgcache ARGUMENTS` in a shell, as a user's login does.
    func run(umask mask: String, _ arguments: [String], environment: [String: String] = [:]) throws -> RunResult {
        let quoted = arguments.map { "'" + $0.replacingOccurrences(of: "'", with: "'\\''") + "'" }.joined(separator: " ")
        return try ImgCacheProcess.runShell("umask \(mask); \"$BIN\" \(quoted)",
                                            environment: ["BIN": Paths.binary, "PATH": "/usr/bin:/bin"].merging(environment) { $1 },
                                            home: home.path, workingDirectory: work.path)
    }

    func mode(_ path: String) -> mode_t {
        var info = stat()
        lstat(path, &info)
        return info.st_mode & 0o7777
    }

    func group(_ path: String) -> gid_t {
        var info = stat()
        lstat(path, &info)
        return info.st_gid
    }

    @Test func underASetgidGroupFolderTheUmaskSharesEveryEntry() throws {
        let team = work.appending("team")
        #expect(mkdir(team, 0o2775) == 0 && chmod(team, 0o2775) == 0)
        // As root, the folder is given to another group, as a team's would be; else it keeps the user's.
        let teamGroup: gid_t = getuid() == 0 ? 1 : getgid()
        if getuid() == 0 { #expect(chown(team, 0, teamGroup) == 0 && chmod(team, 0o2775) == 0) }
        let root = team + "/cache"
        let result = try run(umask: "002", ["--cache-dir", root, "fetch", server.url("logo.png")])
        #expect(result.status == 0, "\(result.standardError)")
        let entry = try #require(result.lines.first)
        let shard = URL(fileURLWithPath: entry).deletingLastPathComponent().path
        #expect(mode(entry) == 0o664, "\(String(mode(entry), radix: 8))")
        for folder in [root, root + "/default", shard] {
            #expect(mode(folder) & 0o777 == 0o775, "\(folder): \(String(mode(folder), radix: 8))")
            #expect(group(folder) == teamGroup)
        }
        #expect(group(entry) == teamGroup)
        #expect(mode(root + "/default/lock") == 0o664)
        // No warning: nothing is writable by others.
        #expect(result.standardError.isEmpty, "\(result.standardError)")
    }

    @Test func theUmaskSettingAndItsVariableReplaceTheUsers() throws {
        let root = work.appending("cache")
        let private77 = try run(umask: "002", ["--cache-dir", root, "fetch", server.url("logo.png")], environment: ["IMGCACHE_UMASK": "077"])
        #expect(private77.status == 0, "\(private77.standardError)")
        #expect(mode(try #require(private77.lines.first)) == 0o600)
        #expect(mode(root + "/default") == 0o700)

        let remembered = try run(umask: "077", ["--cache-dir", root, "-n", "team", "config", "--umask", "002"])
        #expect(remembered.status == 0, "\(remembered.standardError)")
        let fetched = try run(umask: "077", ["--cache-dir", root, "-n", "team", "fetch", server.url("photo.jpg")])
        let entry = try #require(fetched.lines.first)
        #expect(mode(entry) == 0o664, "\(String(mode(entry), radix: 8))")
        let shown = try run(umask: "077", ["--cache-dir", root, "-n", "team", "--json", "config"])
        let config = try shown.jsonLines().first
        #expect(config?["umask"] as? String == "002" && config?["umask_source"] as? String == "remembered")

        // A mask that would lock the owner out is refused.
        #expect(try run(umask: "022", ["--cache-dir", root, "config", "--umask", "777"]).status == 64)

        let bad = try run(umask: "022", ["--cache-dir", root, "fetch", server.url("logo.png")], environment: ["IMGCACHE_UMASK": "999"])
        #expect(bad.status == 64 && bad.standardError.contains("IMGCACHE_UMASK"), "\(bad.standardError)")
        #expect(try run(umask: "022", ["--cache-dir", root, "config", "--umask", "8"]).status == 64)
    }

    /// A team cache's settings file is one every member may write: a remembered mask that grants
    /// more than the user's own umask is said (once a run), and one that lets every user write is
    /// never taken from it.
    @Test func aRememberedMaskThatOpensTheCacheIsSaidAndOneFromAnotherUserIsRefused() throws {
        let root = work.appending("cache")
        #expect(try run(umask: "077", ["--cache-dir", root, "config", "--umask", "002"]).status == 0)
        let widened = try run(umask: "077", ["--cache-dir", root, "fetch", server.url("logo.png"), server.url("photo.jpg")])
        #expect(widened.status == 0, "\(widened.standardError)")
        let said = widened.errorLines.filter { $0.contains("its remembered umask 002 grants more than yours (077)") }
        #expect(said.count == 1, "\(widened.standardError)")
        #expect(mode(try #require(widened.lines.first)) == 0o664)
        // -q hides it, as every warning.
        #expect(try run(umask: "077", ["-q", "--cache-dir", root, "fetch", server.url("logo.png")]).standardError.isEmpty)
        // Not a word when the mask grants no more than the user's own.
        #expect(try run(umask: "002", ["--cache-dir", root, "fetch", server.url("logo.png")]).standardError.isEmpty)

        // A mask that lets every user write is never remembered: config refuses it, and one written into the
        // file by hand (a member editing it in place keeps its owner) is ignored, whoever owns the file.
        let asked = try run(umask: "022", ["--cache-dir", root, "config", "--umask", "000"])
        #expect(asked.status == 64 && asked.standardError.contains("it lets every user replace cached images; IMGCACHE_UMASK=000 asks for it for one run"),
                "\(asked.standardError)")
        let settings = root + "/default/settings"
        try "imgcache-settings 1\numask 000\n".write(toFile: settings, atomically: false, encoding: .utf8)
        let refused = try run(umask: "022", ["--cache-dir", root, "fetch", server.url("anim.gif")])
        #expect(refused.status == 0)
        #expect(refused.standardError.contains("ignoring its remembered umask 000: it lets every user replace cached images"),
                "\(refused.standardError)")
        #expect(mode(try #require(refused.lines.first)) == 0o644)
        // Asked for in the environment, for one run, it applies.
        let asked000 = try run(umask: "022", ["--cache-dir", root, "fetch", server.url("sticker.webp")], environment: ["IMGCACHE_UMASK": "000"])
        #expect(mode(try #require(asked000.lines.first)) == 0o666)
    }

    /// Any member may write a team cache's settings file: a remembered store that would send the
    /// user's credentials is used only while the file can be written by the user alone.
    @Test func aRememberedStoreWithCredentialsIsUsedOnlyFromTheUsersOwnSettings() throws {
        let root = work.appending("cache")
        #expect(try run(umask: "002", ["--cache-dir", root, "fetch", server.url("logo.png")]).status == 0)
        let settings = root + "/default/settings"
        func storeRequests() -> Int { server.requests.filter { $0.uri.hasPrefix("/store/") }.count }
        try "imgcache-settings 1\nremote \(server.url("store"))|bearer-env=TEAM_TOKEN\n".write(toFile: settings, atomically: false, encoding: .utf8)
        #expect(chmod(settings, 0o664) == 0)
        let shared = try run(umask: "002", ["--cache-dir", root, "fetch", server.url("photo.jpg")], environment: ["TEAM_TOKEN": "t0ken"])
        #expect(shared.status == 0, "\(shared.standardError)")
        #expect(shared.standardError.contains("ignoring the remembered remote") && shared.standardError.contains("would send your credentials"),
                "\(shared.standardError)")
        #expect(storeRequests() == 0)
        // Written by the user alone, it is used.
        #expect(chmod(settings, 0o644) == 0)
        let own = try run(umask: "022", ["--cache-dir", root, "fetch", server.url("gray.jpg")], environment: ["TEAM_TOKEN": "t0ken"])
        #expect(own.status == 0 && !own.standardError.contains("ignoring"), "\(own.standardError)")
        #expect(server.requests(atLeast: 4).filter { $0.uri.hasPrefix("/store/") }.count > 0)
        // A store without credentials is used from a shared file.
        try "imgcache-settings 1\nremote \(server.url("store"))\n".write(toFile: settings, atomically: false, encoding: .utf8)
        #expect(chmod(settings, 0o664) == 0)
        let open = try run(umask: "002", ["--cache-dir", root, "fetch", server.url("anim.gif")])
        #expect(open.status == 0 && !open.standardError.contains("ignoring"), "\(open.standardError)")
        // Remembering one with credentials into a shared file says that later runs will not use it.
        let remembered = try run(umask: "002", ["--cache-dir", root, "fetch", "--remote", server.url("store") + "|bearer-env=TEAM_TOKEN", "--remember",
                                                server.url("sticker.webp")], environment: ["TEAM_TOKEN": "t0ken"])
        #expect(remembered.standardError.contains("later runs will not use a remembered store that sends credentials"), "\(remembered.standardError)")
    }

    /// A member of a team cache cannot lift everyone's decode limits: a remembered limit above the
    /// default is taken only from a settings file the user alone can write; a lower one from any.
    @Test func aSharedSettingsFileCannotWidenTheDecodeLimits() throws {
        let root = work.appending("cache")
        #expect(try run(umask: "002", ["--cache-dir", root, "fetch", server.url("logo.png")]).status == 0)
        let settings = root + "/default/settings"
        func applied() throws -> (seconds: Double?, memory: Int?, sources: [String?], warnings: String) {
            let shown = try run(umask: "002", ["--cache-dir", root, "--json", "config"])
            let object = try #require(try shown.jsonLines().first)
            return (object["max_decode_time"] as? Double, object["max_decode_memory"] as? Int,
                    [object["max_decode_time_source"] as? String, object["max_decode_memory_source"] as? String], shown.standardError)
        }
        try "imgcache-settings 1\nmax-decode-time 3600s\nmax-decode-memory 20G\n".write(toFile: settings, atomically: false, encoding: .utf8)
        // Written by another member: owned by another uid (as root), or writable by the group.
        if getuid() == 0 { #expect(chown(settings, 65534, 65534) == 0) }
        #expect(chmod(settings, 0o664) == 0)
        let shared = try applied()
        #expect(shared.seconds == 30 && shared.sources == ["default", "default"], "\(shared)")
        #expect(shared.warnings.contains("ignoring its remembered max-decode-time 3600s") && shared.warnings.contains("ignoring its remembered max-decode-memory "),
                "\(shared.warnings)")
        let thumbnail = try run(umask: "002", ["--cache-dir", root, "fetch", "--thumbnail", "8x", server.url("photo.jpg")])
        #expect(thumbnail.status == 0 && thumbnail.standardError.contains("ignoring its remembered max-decode-time 3600s"), "\(thumbnail.standardError)")
        // Given on the command line, the limit is the user's own: no word about the file's.
        let given = try run(umask: "002", ["--cache-dir", root, "fetch", "--max-decode-time", "2m", "--max-decode-memory", "1G", "--thumbnail", "9x",
                                           server.url("photo.jpg")])
        #expect(given.status == 0 && !given.standardError.contains("ignoring"), "\(given.standardError)")
        // Lower limits are taken from a shared file.
        try "imgcache-settings 1\nmax-decode-time 2s\nmax-decode-memory 64MiB\n".write(toFile: settings, atomically: false, encoding: .utf8)
        let lower = try applied()
        #expect(lower.seconds == 2 && lower.memory == 64 << 20 && lower.sources == ["remembered", "remembered"] && !lower.warnings.contains("ignoring"),
                "\(lower)")
        // The user's own file widens them.
        try "imgcache-settings 1\nmax-decode-time 3600s\n".write(toFile: settings, atomically: false, encoding: .utf8)
        if getuid() == 0 { #expect(chown(settings, 0, 0) == 0) }
        #expect(chmod(settings, 0o644) == 0)
        let own = try applied()
        #expect(own.seconds == 3600 && own.sources[0] == "remembered" && !own.warnings.contains("ignoring"), "\(own)")
    }

    @Test func settingTheMaskSharesTheNamespaceAtOnce() throws {
        let team = work.appending("team")
        #expect(mkdir(team, 0o2775) == 0 && chmod(team, 0o2775) == 0)
        let root = team + "/cache"
        // One member made the namespace with a private umask; the mask set then shares it.
        #expect(try run(umask: "077", ["--cache-dir", root, "fetch", server.url("logo.png")]).status == 0)
        #expect(try run(umask: "077", ["--cache-dir", root, "config", "--umask", "002"]).status == 0)
        #expect(mode(root + "/default") & 0o777 == 0o775, "\(String(mode(root + "/default"), radix: 8))")
        for file in ["lock", "settings", "stats"] { #expect(mode(root + "/default/" + file) == 0o664, "\(file)") }
        // A fresh namespace made by config itself.
        #expect(try run(umask: "022", ["--cache-dir", root, "-n", "fresh", "config", "--umask", "002"]).status == 0)
        #expect(mode(root + "/fresh") & 0o777 == 0o775 && mode(root + "/fresh/settings") == 0o664)
    }

    @Test func aRootMadeUnderTheUsersCacheFolderStaysPrivate() throws {
        let result = try run(umask: "002", ["fetch", server.url("logo.png")])
        #expect(result.status == 0, "\(result.standardError)")
        let root = home.appending(".cache/imgcache")
        #expect(mode(root) == 0o700, "\(String(mode(root), radix: 8))")
        #expect(mode(root + "/default") == 0o775)
    }
}
