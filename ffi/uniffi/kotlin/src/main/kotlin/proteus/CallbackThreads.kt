// Hand-written companion of the generated bindings (proteus.kt), called from its UniffiLib
// initializer (ffi/uniffi/scripts/build.sh adds the call): how JNA treats the library's threads.
package proteus

import com.sun.jna.CallbackThreadInitializer
import com.sun.jna.Native

/**
 * Keeps the library's worker threads attached to the JVM between their callbacks.
 *
 * Every suspend call completes on one of the library's native worker threads, which calls back
 * into Kotlin (the coroutine's continuation; a batch's [BatchDelivery] before that). By default
 * JNA attaches such a thread for each callback and detaches it afterwards: a new
 * `java.lang.Thread` per call, which made a 1000-message `decryptBatch` about 0.3-0.6 ms slower
 * (docs/benchmarks.md, "Kotlin: the cost of crossing the boundary"). With this initializer the
 * thread stays attached, as a daemon, until it exits; JNA detaches it then. JNA reads the
 * initializer when a callback is first handed to native code, so this runs before any is.
 */
internal fun keepCallbackThreadsAttached() {
    val keep = CallbackThreadInitializer(true, false)
    Native.setCallbackThreadInitializer(uniffiRustFutureContinuationCallbackImpl, keep)
    Native.setCallbackThreadInitializer(uniffiCallbackInterfaceBatchDelivery.`deliver`, keep)
    Native.setCallbackThreadInitializer(uniffiCallbackInterfaceBatchDelivery.uniffiFree, keep)
    Native.setCallbackThreadInitializer(uniffiCallbackInterfaceBatchDelivery.uniffiClone, keep)
}
