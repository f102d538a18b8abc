package proteus

import java.io.File
import java.lang.reflect.Modifier
import kotlin.test.Test
import kotlin.test.assertEquals

/**
 * The public surface of the Kotlin binding, by reflection, against ffi/api-surface.json (the
 * list every binding shares): a method added to or missing from Kotlin fails here.
 */
class ApiSurfaceTest {
    private val surface = File(System.getProperty("user.dir"), "../../api-surface.json").readText()

    /** The names in the JSON array under [key] (a flat list of strings). */
    private fun listed(key: String): Set<String> {
        val array = Regex("\"$key\"\\s*:\\s*\\[([^\\]]*)\\]").find(surface)!!.groupValues[1]
        return Regex("\"(\\w+)\"").findAll(array).map { it.groupValues[1] }.toSet()
    }

    /** Generated plumbing, not part of the shared surface (as api-surface.json says). */
    private val plumbing = setOf("errorCodes", "clientSealStore", "clientRekeyStore", "clientDeleteStore", "destroy", "getUniffiIsDestroyed", "getUniffiContinuationHandleMap", "use")

    private fun publicNames(c: Class<*>, static: Boolean) = c.declaredMethods
        .filter { Modifier.isPublic(it.modifiers) && Modifier.isStatic(it.modifiers) == static && !it.isSynthetic }
        .map { it.name }
        .filter { '$' !in it && !it.startsWith("uniffi") && it !in plumbing }
        .toSet()

    @Test
    fun `the Kotlin surface is the shared list`() {
        val extensions = Class.forName("proteus.ProteusExtensionsKt").declaredMethods
            .filter { Modifier.isPublic(it.modifiers) && it.parameterTypes.isNotEmpty() }
        val onCompanion = extensions.filter { it.parameterTypes[0] == Client.Companion::class.java }.map { it.name }.toSet()
        val onClient = extensions.filter { it.parameterTypes[0] == Client::class.java }.map { it.name }.filter { '$' !in it }.toSet()

        assertEquals(listed("constructors"), publicNames(Client.Companion::class.java, static = false))
        assertEquals(listed("static"), onCompanion)
        assertEquals(listed("methods"), publicNames(Client::class.java, static = false) + onClient)
        assertEquals(listed("functions"), publicNames(Class.forName("proteus.ProteusKt"), static = true))
    }
}
