//! Request and response bodies shared by many routes.

use salvo_oapi::ToSchema;
use serde::{Deserialize, Serialize};

/// `{id}`: the body of the delete-by-id (and test/retry-by-id) routes.
#[derive(Debug, Deserialize, ToSchema)]
pub struct IdBody {
    pub id: u64,
}

/// `{success: true}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct Success {
    pub success: bool,
}

impl Success {
    pub fn ok() -> Self {
        Self { success: true }
    }
}
