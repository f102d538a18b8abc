import proteus.BatchDelivery
import proteus.BatchProgress
import proteus.BatchResult
import proteus.Client
import proteus.QueuedMessage

/** A consumer of the JVM package: two in-memory clients, a session and a batch. */
fun main() {
    val alice = Client.inMemory()
    val bob = Client.inMemory()
    alice.createSession("bob", bob.generatePrekeys(1u).single().bytes)
    val queue = listOf(QueuedMessage("alice", alice.encrypt("bob", "hello from a consumer".toByteArray())))
    val received = mutableListOf<BatchResult>()
    bob.decryptBatch(queue, object : BatchDelivery {
        override fun deliver(results: List<BatchResult>, progress: BatchProgress): Boolean {
            received += results
            return true
        }
    })
    val text = received.single().plaintext?.let { String(it) }
    check(text == "hello from a consumer") { "got $text" }
    check(received.single().sender == alice.fingerprint())
    println("consumer ok")
}
