#if canImport(Glibc)
import Glibc
#endif
import ImgCacheCore

/// `-u USER` without a password: asked on the terminal, without echo, as curl does.
enum PasswordPrompt {
    /// The password typed for `user`; nil when there is no terminal to ask on.
    static func ask(user: String) -> String? {
        let terminal = open("/dev/tty", O_RDWR | O_CLOEXEC | O_NOCTTY)
        guard terminal >= 0 else { return nil }
        defer { close(terminal) }
        var saved = termios()
        let canHide = tcgetattr(terminal, &saved) == 0
        if canHide {
            var hidden = saved
            hidden.c_lflag &= ~tcflag_t(ECHO)
            // TCSANOW, not TCSAFLUSH: a password typed ahead of the prompt is kept, not discarded.
            tcsetattr(terminal, TCSANOW, &hidden)
        }
        // Echo is off before the prompt shows, so nothing typed after it is ever echoed.
        let prompt = Array("Enter host password for user '\(ControlCharacters.escaped(user))':".utf8)
        _ = prompt.withUnsafeBytes { write(terminal, $0.baseAddress, $0.count) }
        defer {
            if canHide { tcsetattr(terminal, TCSANOW, &saved) }
            _ = write(terminal, "\n", 1)
        }
        var typed: [UInt8] = []
        var byte: UInt8 = 0
        while typed.count < 4096, read(terminal, &byte, 1) == 1, byte != 0x0A, byte != 0x0D {
            typed.append(byte)
        }
        return String(decoding: typed, as: UTF8.self)
    }
}
