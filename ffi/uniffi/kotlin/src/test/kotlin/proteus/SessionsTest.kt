package proteus

import kotlinx.coroutines.test.runTest
import kotlin.test.Test
import kotlin.test.assertEquals
import kotlin.test.assertFalse
import kotlin.test.assertTrue

class SessionsTest {
    @Test
    fun `a session from a bundle works both ways`() = runTest {
        val (alice, bob) = pair()
        assertEquals(1, bob.prekeysRemaining())
        val hello = alice.encrypt("bob", bytes("hello bob"))
        // Bob has no session yet: the PreKeyMessage creates it and uses up the prekey.
        assertFalse(bob.hasSession("alice"))
        assertEquals("hello bob", text(bob.decrypt("alice", hello)))
        assertTrue(bob.hasSession("alice"))
        assertEquals(0, bob.prekeysRemaining())
        assertEquals(alice.fingerprint(), bob.remoteFingerprint("alice"))
        assertEquals(bob.fingerprint(), alice.remoteFingerprint("bob"))

        repeat(3) { round ->
            val toAlice = bob.encrypt("alice", bytes("reply $round"))
            assertEquals("reply $round", text(alice.decrypt("bob", toAlice)))
            val toBob = alice.encrypt("bob", bytes("again $round"))
            assertEquals("again $round", text(bob.decrypt("alice", toBob)))
        }
        alice.close()
        bob.close()
    }

    @Test
    fun `out of order messages decrypt`() = runTest {
        val (alice, bob) = establishedPair()
        val envelopes = (0 until 5).map { alice.encrypt("bob", bytes("m$it")) }
        for (i in listOf(4, 0, 3, 1, 2)) {
            assertEquals("m$i", text(bob.decrypt("alice", envelopes[i])))
        }
    }

    @Test
    fun `session ids, has session and delete`() = runTest {
        val alice = Client.inMemory()
        val peers = (0 until 3).map { Client.inMemory() }
        peers.forEachIndexed { i, peer ->
            alice.createSession("peer:$i", peer.generatePrekeys(1).single().bytes)
        }
        assertEquals(listOf("peer:0", "peer:1", "peer:2"), alice.sessionIds().sorted())
        alice.deleteSession("peer:1")
        assertFalse(alice.hasSession("peer:1"))
        assertEquals(listOf("peer:0", "peer:2"), alice.sessionIds().sorted())
        expectError(104, ErrorKind.SESSION_NOT_FOUND) { alice.encrypt("peer:1", bytes("x")) }
    }

    @Test
    fun `encrypt batch commits several messages for several sessions at once`() = runTest {
        val alice = Client.inMemory()
        val phone = Client.inMemory()
        val laptop = Client.inMemory()
        alice.createSession("bob:phone", phone.generatePrekeys(1).single().bytes)
        alice.createSession("bob:laptop", laptop.generatePrekeys(1).single().bytes)
        val envelopes = alice.encryptBatch(
            listOf(
                OutgoingMessage("bob:phone", bytes("to phone")),
                OutgoingMessage("bob:laptop", bytes("to laptop")),
                OutgoingMessage("bob:phone", bytes("phone again")),
            ),
        )
        assertEquals(3, envelopes.size)
        assertEquals("to phone", text(phone.decrypt("alice", envelopes[0])))
        assertEquals("to laptop", text(laptop.decrypt("alice", envelopes[1])))
        assertEquals("phone again", text(phone.decrypt("alice", envelopes[2])))
        // One unknown session: nothing is encrypted or committed.
        expectError(104, ErrorKind.SESSION_NOT_FOUND) {
            alice.encryptBatch(listOf(OutgoingMessage("bob:phone", bytes("a")), OutgoingMessage("nobody", bytes("b"))))
        }
    }

    @Test
    fun `an exported session continues in a client of the same identity`() = runTest {
        val (alice, bob) = establishedPair()
        val copy = Client.inMemory()
        copy.importIdentity(alice.exportIdentity())
        copy.importSession("bob", alice.exportSession("bob"))
        assertEquals(bob.fingerprint(), copy.remoteFingerprint("bob"))
        assertEquals("from the copy", text(bob.decrypt("alice", copy.encrypt("bob", bytes("from the copy")))))
        assertEquals("to the copy", text(copy.decrypt("bob", bob.encrypt("alice", bytes("to the copy")))))
    }

    @Test
    fun `topUpPrekeys fills the stock and resetSession starts over`() = runTest {
        val carol = Client.inMemory()
        assertEquals(listOf(0, 1, 2), carol.topUpPrekeys(3).map { it.id })
        assertEquals(emptyList(), carol.topUpPrekeys(3))
        assertEquals(3, carol.prekeysRemaining())

        val (alice, bob) = establishedPair()
        val old = bob.encrypt("alice", bytes("on the old session"))
        assertEquals(false, alice.resetSession("bob", bob.generatePrekeys(1).single().bytes))
        assertEquals("new", text(bob.decrypt("alice", alice.encrypt("bob", bytes("new")))))
        expectError(205, ErrorKind.UNKNOWN_SESSION_TAG) { alice.decrypt("bob", old) }
        assertEquals(true, alice.resetSession("bob", carol.generatePrekeys(1).single().bytes))
        assertEquals(carol.fingerprint(), alice.remoteFingerprint("bob"))
        expectError(104, ErrorKind.SESSION_NOT_FOUND) { alice.resetSession("nobody", carol.lastResortBundle().bytes) }
    }
}
