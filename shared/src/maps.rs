//! What is kept of a map as a closed set of names.
use crate::text_enum::text_enum;

text_enum! {
    // `maps.visibility`: a map has no restricted level, having no grants.
    // The doc comment is the schema's description in the OpenAPI document.
    /// Who may see a map.
    #[derive(utoipa::ToSchema)]
    pub enum MapVisibility {
        Private = "private",
        Internal = "internal",
        Public = "public",
    }
}
