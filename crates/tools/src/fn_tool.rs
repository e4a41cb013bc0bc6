//! [`FnTool`]: a tool made of a name, a description and an async function whose argument type
//! gives the schema.

use std::future::Future;
use std::marker::PhantomData;

use agentwire_core::ToolSpec;
use futures::FutureExt;
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::schema::parameters_for;
use crate::tool::{Tool, ToolContext, ToolFailure, ToolFuture};

/// A tool defined by an async function of its arguments.
///
/// The arguments are a Rust type that derives `Deserialize` and `JsonSchema`; the schema the
/// model sees is derived from it by [`parameters_for`], and the function gets the arguments
/// already checked and deserialized. The function returns anything `Serialize` (usually a
/// `serde_json::Value` or a small struct) or a [`ToolFailure`]; `?` works on any
/// `std::error::Error`.
///
/// ```
/// # use agentwire_tools::{FnTool, Tool};
/// # use serde::Deserialize;
/// # use schemars::JsonSchema;
/// #[derive(Deserialize, JsonSchema)]
/// struct Add {
///     a: f64,
///     b: f64,
/// }
///
/// let add = FnTool::new("add", "Adds two numbers", |args: Add, _| async move { Ok(args.a + args.b) });
/// assert_eq!(add.spec().parameters["required"], serde_json::json!(["a", "b"]));
/// ```
pub struct FnTool<A, F> {
    spec: ToolSpec,
    body: F,
    // `fn(A)`: the tool holds no `A`, so it is `Send + Sync` whatever `A` is.
    args: PhantomData<fn(A)>,
}

impl<A, F> FnTool<A, F>
where
    A: JsonSchema,
{
    /// A tool named `name` (1 to 64 ASCII letters, digits, `_` or `-`) that the model is told
    /// does `description`, running `body` on each call.
    pub fn new(name: impl Into<String>, description: impl Into<String>, body: F) -> Self {
        Self {
            spec: ToolSpec::new(name, description, parameters_for::<A>()),
            body,
            args: PhantomData,
        }
    }
}

impl<A, F, Fut, R> Tool for FnTool<A, F>
where
    A: DeserializeOwned,
    F: Fn(A, ToolContext) -> Fut + Send + Sync,
    Fut: Future<Output = Result<R, ToolFailure>> + Send + 'static,
    R: Serialize,
{
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn call(&self, args: Value, context: ToolContext) -> ToolFuture<'_> {
        // The schema has passed, so this fails only where the schema says less than serde
        // checks (e.g. a number too large for the field's integer type).
        let args = match serde_json::from_value::<A>(args) {
            Ok(args) => args,
            Err(error) => {
                let failure =
                    ToolFailure::invalid_arguments(format!("the arguments do not fit: {error}"));
                return futures::future::ready(Err(failure)).boxed();
            }
        };
        let result = (self.body)(args, context);
        async move {
            let result = result.await?;
            serde_json::to_value(result).map_err(|error| {
                ToolFailure::new(format!("its result could not be written as JSON: {error}"))
            })
        }
        .boxed()
    }
}

impl<A, F> std::fmt::Debug for FnTool<A, F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FnTool")
            .field("spec", &self.spec)
            .finish_non_exhaustive()
    }
}
