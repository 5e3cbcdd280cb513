/** The models this gateway serves, as listed on GET /v1/models. The plugin registry provides the real catalog. */
import { Context, Layer } from "effect"

export interface CatalogModel {
  readonly id: string
  readonly ownedBy: string
  /** Unix seconds. */
  readonly created: number
  readonly displayName: string
}

export class ModelCatalog extends Context.Service<ModelCatalog, { readonly models: ReadonlyArray<CatalogModel> }>()(
  "tollgate/app/ModelCatalog"
) {
  static readonly empty = Layer.succeed(ModelCatalog, ModelCatalog.of({ models: [] }))
}
