package proteus

import kotlinx.coroutines.test.runTest
import kotlin.test.Test
import kotlin.test.assertEquals
import kotlin.test.assertFalse
import kotlin.test.assertNull
import kotlin.test.assertTrue

/**
 * The Kotlin constants (ProteusErrorCode, generated from the registry by
 * ffi/codes/tests/error_code_files.rs) against the native library's own registry,
 * `errorCodes()`: a constant that drifts, or a code the library gained, fails here.
 */
class ErrorCodesTest {
    /** `PreKeyNotFound` -> `PRE_KEY_NOT_FOUND`, as the generator names the constants. */
    private fun constantName(name: String) = name.replace(Regex("(?<!^)([A-Z])"), "_$1").uppercase()

    @Test
    fun `every constant matches the native registry`() = runTest {
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
    fun `the kind enum has one value per kind name of the registry`() = runTest {
        assertEquals(
            errorCodes().map { constantName(it.kind) }.distinct(),
            ErrorKind.values().map { it.name },
        )
    }

    @Test
    fun `each family is its own exception class`() = runTest {
        val (alice, bob) = establishedPair()
        val families = mapOf(
            "Engine" to runCatching { alice.encrypt("nobody", bytes("x")) },
            "Decrypt" to runCatching { bob.decrypt("alice", alice.encrypt("bob", bytes("x")).also { it[it.size - 1] = 0 }) },
            "Decode" to runCatching { bob.decrypt("alice", byteArrayOf(1)) },
            "Input" to runCatching { alice.encrypt("bob", ByteArray(5 * 1024 * 1024)) },
            "System" to runCatching { Client.open(tempStore().toString(), mode = OpenMode.EXISTING) },
        ).mapValues { it.value.exceptionOrNull() as ProteusException }
        for ((family, e) in families) {
            assertEquals(family, e::class.simpleName, e.toString())
            assertEquals(family, e.errorCode!!.family)
        }
        // One catch for a whole family.
        val caught = try {
            bob.decrypt("alice", byteArrayOf(1))
            null
        } catch (e: ProteusException.Decode) {
            e.kind
        }
        assertTrue(caught in setOf(ErrorKind.TRUNCATED, ErrorKind.UNEXPECTED_TYPE, ErrorKind.UNKNOWN_MESSAGE_TYPE), "$caught")
    }

    @Test
    fun `errors and batch results carry registered codes`() = runTest {
        val (alice, bob) = establishedPair()
        val e = expectError(ProteusErrorCode.SESSION_NOT_FOUND.code, ErrorKind.SESSION_NOT_FOUND) {
            alice.encrypt("carol:phone-7f3a", bytes("x"))
        }
        assertEquals(ProteusErrorCode.SESSION_NOT_FOUND, e.errorCode)
        // Session ids are user data: never in an error's text.
        assertFalse(e.message!!.contains("phone-7f3a"), e.message)
        assertEquals(ProteusErrorCode.PRE_KEY_NOT_FOUND, expectError(101, ErrorKind.PRE_KEY_NOT_FOUND) { bob.prekeyBundle(4242) }.errorCode)

        val envelope = alice.encrypt("bob", bytes("once"))
        bob.decrypt("alice", envelope)
        val collector = Collector()
        bob.decryptBatch(listOf(QueuedMessage("alice", envelope), QueuedMessage("nobody", envelope)), collector)
        for (r in collector.results) {
            val code = ProteusErrorCode.fromCode(r.errorCode!!)!!
            assertEquals(constantName(code.kind), r.errorKind!!.name)
            assertEquals(code.alreadySeen, r.alreadySeen)
        }
        assertEquals(listOf(ProteusErrorCode.DUPLICATE_MESSAGE, ProteusErrorCode.SESSION_NOT_FOUND),
            collector.results.map { ProteusErrorCode.fromCode(it.errorCode!!) })
    }
}
