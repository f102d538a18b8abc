package proteus

import kotlin.test.Test
import kotlin.test.assertEquals
import kotlin.test.assertFalse
import kotlin.test.assertNull
import kotlin.test.assertTrue

/**
 * The Kotlin constants (ProteusErrorCode, generated from the registry by
 * crates/proteus-core/tests/error_code_files.rs) against the native library's own registry,
 * `errorCodes()`: a constant that drifts, or a code the library gained, fails here.
 */
class ErrorCodesTest {
    /** `PreKeyNotFound` -> `PRE_KEY_NOT_FOUND`, as the generator names the constants. */
    private fun constantName(name: String) = name.replace(Regex("(?<!^)([A-Z])"), "_$1").uppercase()

    @Test
    fun `every constant matches the native registry`() {
        val native = errorCodes()
        val kotlin = ProteusErrorCode.values().toList()
        assertTrue(native.size >= 50, "${native.size} codes")
        assertEquals(native.map { constantName(it.name) }, kotlin.map { it.name })
        for ((n, k) in native.zip(kotlin)) {
            assertEquals(n.code, k.code, k.name)
            assertEquals(n.kind, k.kind, k.name)
            assertEquals(n.family, k.family, k.name)
            assertEquals(n.alreadySeen, k.alreadySeen, k.name)
            assertEquals(k, ProteusErrorCode.fromCode(n.code))
        }
        assertNull(ProteusErrorCode.fromCode(109), "109 is retired")
    }

    @Test
    fun `errors and batch results carry registered codes`() {
        val (alice, bob) = establishedPair()
        val e = expectError(ProteusErrorCode.SESSION_NOT_FOUND.code, "SessionNotFound") {
            alice.encrypt("carol:phone-7f3a", bytes("x"))
        }
        assertEquals(ProteusErrorCode.SESSION_NOT_FOUND, e.errorCode)
        // Session ids are user data: never in an error's text.
        assertFalse(e.message!!.contains("phone-7f3a"), e.message)
        assertEquals(ProteusErrorCode.PRE_KEY_NOT_FOUND, expectError(101, "PreKeyNotFound") { bob.prekeyBundle(4242u) }.errorCode)

        val envelope = alice.encrypt("bob", bytes("once"))
        bob.decrypt("alice", envelope)
        val collector = Collector()
        bob.decryptBatch(listOf(QueuedMessage("alice", envelope), QueuedMessage("nobody", envelope)), collector)
        for (r in collector.results) {
            val code = ProteusErrorCode.fromCode(r.errorCode!!)!!
            assertEquals(code.kind, r.errorKind)
            assertEquals(code.alreadySeen, r.alreadySeen)
        }
        assertEquals(listOf(ProteusErrorCode.DUPLICATE_MESSAGE, ProteusErrorCode.SESSION_NOT_FOUND),
            collector.results.map { ProteusErrorCode.fromCode(it.errorCode!!) })
    }
}
