// A notification extension's path from Kotlin (issue 35, item 7): a fresh JVM opens an existing
// store, decrypts one message, closes it, and prints one JSON line of times and memory. Not a
// test (no @Test): ffi/uniffi/bench/extension.sh starts it in a new JVM for every run, on a new
// copy of the store written by `proteus-bench --extension-setup`, and times the whole process
// from outside as well.
//
//   java -cp <test-classes>:<the jar>:<its runtime dependencies> proteus.ExtensionBenchKt \
//     STORE MESSAGE SESSION_ID
//
// The first call of the bindings loads the native library (JNA), so `open_ms` includes it;
// `before_open_ms` is reading /proc/self/status, the message, and starting runBlocking.
package proteus

import java.io.File
import kotlinx.coroutines.runBlocking

/** A field of /proc/self/status in KiB (Linux), or -1. */
private fun statusKib(field: String): Long =
    File("/proc/self/status").readLines()
        .firstOrNull { it.startsWith("$field:") }
        ?.removePrefix("$field:")?.trim()?.removeSuffix("kB")?.trim()?.toLongOrNull()
        ?: -1

fun main(args: Array<String>) {
    val start = System.nanoTime()
    val rssAtStart = statusKib("VmRSS")
    require(args.size == 3) { "usage: ExtensionBenchKt STORE MESSAGE SESSION_ID" }
    val (store, message, sessionId) = args
    val times = runBlocking {
        val envelope = File(message).readBytes()
        val rssBeforeOpen = statusKib("VmRSS")
        val beforeOpen = System.nanoTime()
        val client = Client.open(store, mode = OpenMode.EXISTING)
        val opened = System.nanoTime()
        val plaintext = client.decrypt(sessionId, envelope)
        val decrypted = System.nanoTime()
        // AutoCloseable: releases the client, which closes the store (no call is in progress).
        client.close()
        val closed = System.nanoTime()
        check(String(plaintext) == "a notification") { "the message did not decrypt to its plaintext" }
        longArrayOf(beforeOpen, opened, decrypted, closed, rssBeforeOpen)
    }
    val (beforeOpen, opened, decrypted, closed, rssBeforeOpen) = times.toList()
    val hwm = statusKib("VmHWM")
    val ms = { a: Long, b: Long -> (b - a) / 1e6 }
    println(
        "{\"main_to_close_ms\":${ms(start, closed)},\"before_open_ms\":${ms(start, beforeOpen)}," +
            "\"open_ms\":${ms(beforeOpen, opened)},\"decrypt_ms\":${ms(opened, decrypted)}," +
            "\"close_ms\":${ms(decrypted, closed)},\"rss_at_main_kib\":$rssAtStart," +
            "\"rss_before_open_kib\":$rssBeforeOpen,\"hwm_kib\":$hwm}",
    )
}
