/** `npm start`: the gateway as configured by the environment (src/Launch.ts). */
import { launch } from "./Launch.ts"

launch()
