// Usage: ExtensionBench STORE MESSAGE SESSION_ID. The native library is linked (the dynamic
// loader maps it before main runs), so the time from main on does not include loading it; the
// process's wall time, taken from outside by extension.sh, does.
import Foundation
import Proteus

let clock = ContinuousClock()
let start = clock.now

/// A field of /proc/self/status in KiB (Linux), or -1.
func statusKib(_ field: String) -> Int {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
          let line = status.split(separator: "\n").first(where: { $0.hasPrefix(field + ":") })
    else { return -1 }
    let digits = line.dropFirst(field.count + 1).filter { $0.isNumber }
    return Int(digits) ?? -1
}

let rssAtMain = statusKib("VmRSS")
let args = CommandLine.arguments
guard args.count == 4 else {
    FileHandle.standardError.write(Data("usage: ExtensionBench STORE MESSAGE SESSION_ID\n".utf8))
    exit(2)
}
let envelope = try Data(contentsOf: URL(fileURLWithPath: args[2]))
let rssBeforeOpen = statusKib("VmRSS")
let beforeOpen = clock.now
let client = try await Client.open(path: args[1], mode: .existing)
let opened = clock.now
let plaintext = try await client.decrypt(sessionId: args[3], envelope: envelope)
let decrypted = clock.now
try await client.close()
let closed = clock.now
guard String(decoding: plaintext, as: UTF8.self) == "a notification" else {
    FileHandle.standardError.write(Data("the message did not decrypt to its plaintext\n".utf8))
    exit(1)
}
let hwm = statusKib("VmHWM")

func ms(_ a: ContinuousClock.Instant, _ b: ContinuousClock.Instant) -> Double {
    let d = (b - a).components
    return Double(d.seconds) * 1000 + Double(d.attoseconds) / 1e15
}

print("{\"main_to_close_ms\":\(ms(start, closed)),\"before_open_ms\":\(ms(start, beforeOpen)),"
    + "\"open_ms\":\(ms(beforeOpen, opened)),\"decrypt_ms\":\(ms(opened, decrypted)),"
    + "\"close_ms\":\(ms(decrypted, closed)),\"rss_at_main_kib\":\(rssAtMain),"
    + "\"rss_before_open_kib\":\(rssBeforeOpen),\"hwm_kib\":\(hwm)}")
