//! GraphQL integrations through the real HTTP API against a real GraphQL server (async-graphql
//! over axum on a loopback port): register the endpoint, connect with a bearer token, call query
//! fields from executions (default selections that descend into objects, `select` overrides,
//! errors with partial data), mutations behind approval, endpoints that are not GraphQL, auth
//! config, and GitHub's public schema imported through the API and searched from the sandbox.

mod support;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use async_graphql::{
    ComplexObject, Context, EmptySubscription, Enum, ID, InputObject, Object, SimpleObject,
};
use async_graphql_axum::{GraphQLRequest, GraphQLResponse};
use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};
use support::Harness;

const TOKEN: &str = "s3cret";

// ---------------------------------------------------------------------------------------------
// The GraphQL server: a small library with nested types, an enum, an input object, lists, a
// field that fails, and a mutation. `/graphql` wants `Authorization: Bearer s3cret`; `/open`
// serves the same schema to anyone.

#[derive(Enum, Copy, Clone, Eq, PartialEq, Debug)]
enum Genre {
    Fiction,
    Science,
}

#[derive(SimpleObject, Clone)]
#[graphql(complex)]
struct Book {
    id: ID,
    title: String,
    genre: Genre,
    tags: Vec<String>,
    year: Option<i32>,
    #[graphql(skip)]
    author_id: String,
}

#[derive(SimpleObject, Clone)]
struct Author {
    id: ID,
    name: String,
}

/// A new book.
#[derive(InputObject)]
struct BookInput {
    title: String,
    author_id: ID,
    genre: Genre,
    tags: Option<Vec<String>>,
}

struct Library {
    books: Mutex<Vec<Book>>,
    authors: Vec<Author>,
}

fn library(ctx: &Context<'_>) -> Arc<Library> {
    ctx.data_unchecked::<Arc<Library>>().clone()
}

#[ComplexObject]
impl Book {
    async fn author(&self, ctx: &Context<'_>) -> Author {
        library(ctx)
            .authors
            .iter()
            .find(|a| a.id.0 == self.author_id)
            .cloned()
            .unwrap()
    }

    /// Price in a currency; only EUR is known.
    async fn price(&self, currency: String) -> async_graphql::Result<Option<f64>> {
        if currency == "EUR" {
            Ok(Some(12.5))
        } else {
            Err(format!("no price in {currency}").into())
        }
    }
}

struct QueryRoot;

#[Object]
impl QueryRoot {
    /// One book by id.
    async fn book(&self, ctx: &Context<'_>, id: ID) -> Option<Book> {
        let lib = library(ctx);
        let books = lib.books.lock().unwrap();
        books.iter().find(|b| b.id == id).cloned()
    }

    /// Books, optionally of one genre.
    async fn books(
        &self,
        ctx: &Context<'_>,
        genre: Option<Genre>,
        #[graphql(default = 10)] limit: i32,
    ) -> Vec<Book> {
        let lib = library(ctx);
        let books = lib.books.lock().unwrap();
        books
            .iter()
            .filter(|b| genre.is_none_or(|g| b.genre == g))
            .take(limit as usize)
            .cloned()
            .collect()
    }

    async fn hello(&self, name: String) -> String {
        format!("Hello, {name}!")
    }

    async fn broken(&self) -> async_graphql::Result<String> {
        Err("the broken field always fails".into())
    }
}

struct MutationRoot;

#[Object]
impl MutationRoot {
    /// Adds a book to the library.
    async fn add_book(&self, ctx: &Context<'_>, input: BookInput) -> Book {
        let lib = library(ctx);
        let mut books = lib.books.lock().unwrap();
        let book = Book {
            id: ID(format!("{}", books.len() + 1)),
            title: input.title,
            genre: input.genre,
            tags: input.tags.unwrap_or_default(),
            year: None,
            author_id: input.author_id.0,
        };
        books.push(book.clone());
        book
    }
}

type LibrarySchema = async_graphql::Schema<QueryRoot, MutationRoot, EmptySubscription>;

#[derive(Clone)]
struct AppState {
    schema: LibrarySchema,
    requests: Arc<AtomicUsize>,
    bodies: Arc<Mutex<Vec<String>>>,
}

async fn serve(state: AppState, request: GraphQLRequest) -> Response {
    state.requests.fetch_add(1, Ordering::SeqCst);
    let request = request.into_inner();
    state.bodies.lock().unwrap().push(request.query.clone());
    GraphQLResponse::from(state.schema.execute(request).await).into_response()
}

async fn guarded(
    State(state): State<AppState>,
    headers: HeaderMap,
    request: GraphQLRequest,
) -> Response {
    let expected = format!("Bearer {TOKEN}");
    if headers.get("authorization").and_then(|v| v.to_str().ok()) != Some(expected.as_str()) {
        state.requests.fetch_add(1, Ordering::SeqCst);
        return (StatusCode::UNAUTHORIZED, "missing or wrong bearer token").into_response();
    }
    serve(state, request).await
}

async fn open(State(state): State<AppState>, request: GraphQLRequest) -> Response {
    serve(state, request).await
}

struct Server {
    base: String,
    requests: Arc<AtomicUsize>,
    bodies: Arc<Mutex<Vec<String>>>,
}

impl Server {
    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    fn requests(&self) -> usize {
        self.requests.load(Ordering::SeqCst)
    }

    fn last_query(&self) -> String {
        self.bodies
            .lock()
            .unwrap()
            .last()
            .cloned()
            .unwrap_or_default()
    }
}

async fn start_server() -> Server {
    let lib = Arc::new(Library {
        authors: vec![
            Author {
                id: ID("a1".into()),
                name: "Ursula K. Le Guin".into(),
            },
            Author {
                id: ID("a2".into()),
                name: "Carl Sagan".into(),
            },
        ],
        books: Mutex::new(vec![
            Book {
                id: ID("1".into()),
                title: "The Dispossessed".into(),
                genre: Genre::Fiction,
                tags: vec!["utopia".into()],
                year: Some(1974),
                author_id: "a1".into(),
            },
            Book {
                id: ID("2".into()),
                title: "Cosmos".into(),
                genre: Genre::Science,
                tags: vec![],
                year: None,
                author_id: "a2".into(),
            },
        ]),
    });
    let state = AppState {
        schema: LibrarySchema::build(QueryRoot, MutationRoot, EmptySubscription)
            .data(lib)
            .finish(),
        requests: Arc::new(AtomicUsize::new(0)),
        bodies: Arc::new(Mutex::new(Vec::new())),
    };
    let page = || async { Html("<!DOCTYPE html><html><body>Welcome</body></html>") };
    let app = Router::new()
        .route("/graphql", post(guarded))
        .route("/open", post(open))
        .route("/html", get(page).post(page))
        .route(
            "/json",
            post(|| async { axum::Json(json!({"hello": "world"})) }),
        )
        .with_state(state.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr: SocketAddr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    Server {
        base: format!("http://{addr}"),
        requests: state.requests,
        bodies: state.bodies,
    }
}

// ---------------------------------------------------------------------------------------------
// Helpers

fn bearer_template() -> Value {
    json!([{"type": "apiKey", "headers": {"Authorization": ["Bearer ", {"type": "variable", "name": "token"}]}}])
}

/// The value the execution returned (`structured.result`), after checking it completed.
fn result(executed: &Value) -> Value {
    assert_eq!(executed["status"], "completed", "{executed}");
    executed["structured"]["result"].clone()
}

async fn integrations(h: &Harness) -> Vec<String> {
    let (status, list) = h.get("/api/integrations").await;
    assert_eq!(status, 200, "{list}");
    list.as_array()
        .unwrap()
        .iter()
        .map(|i| i["slug"].as_str().unwrap().to_owned())
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Tests

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn graphql_journey_with_a_bearer_token() {
    let server = start_server().await;
    let h = Harness::start().await;

    // The endpoint wants a token: the unauthenticated check at add meets 401 and is accepted.
    let (status, added) = h
        .post(
            "/api/graphql/integrations",
            json!({"endpoint": server.url("/graphql"), "slug": "library", "name": "Library",
                   "description": "Books and authors", "authenticationTemplate": bearer_template()}),
        )
        .await;
    assert_eq!(status, 200, "{added}");
    assert_eq!(added, json!({"slug": "library", "name": "Library"}));
    assert_eq!(server.requests(), 1, "one unauthenticated introspection");
    let (_, view) = h.get("/api/graphql/integrations/library").await;
    assert_eq!(view["kind"], "graphql", "{view}");
    assert_eq!(view["hasSchema"], false, "{view}");
    let (status, config) = h.get("/api/graphql/integrations/library/config").await;
    assert_eq!(status, 200);
    assert_eq!(
        config,
        json!({"endpoint": server.url("/graphql"), "name": "Library", "authenticationTemplate": [
            {"kind": "apikey", "slug": "header", "placements": [
                {"carrier": "header", "name": "Authorization", "prefix": "Bearer "}]}]})
    );
    let (_, integration) = h.get("/api/integrations/library").await;
    assert_eq!(integration["displayUrl"], server.url("/graphql"));
    assert_eq!(integration["authMethods"][0]["template"], "header");

    // The connection introspects with its token; its tools are the root fields.
    let (status, connection) = h
        .post(
            "/api/connections",
            json!({"owner": "org", "name": "main", "integration": "library", "template": "header", "value": TOKEN}),
        )
        .await;
    assert_eq!(status, 200, "{connection}");
    assert_eq!(server.requests(), 2);
    let (_, view) = h.get("/api/graphql/integrations/library").await;
    assert_eq!(view["hasSchema"], true, "{view}");
    let (_, tools) = h.get("/api/tools?integration=library").await;
    let mut names: Vec<&str> = tools
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "mutation.addBook",
            "query.book",
            "query.books",
            "query.broken",
            "query.hello"
        ]
    );
    let add_book = tools
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "mutation.addBook")
        .unwrap();
    assert_eq!(add_book["requiresApproval"], true, "{add_book}");
    assert_eq!(add_book["pluginId"], "graphql");
    let (status, schema) = h
        .get("/api/tools/schema?address=tools.library.org.main.mutation.addBook")
        .await;
    assert_eq!(status, 200, "{schema}");
    assert_eq!(
        schema["inputSchema"]["properties"]["input"]["$ref"],
        "#/$defs/BookInput"
    );
    assert!(
        schema["typeScriptDefinitions"]["Genre"]
            .as_str()
            .unwrap()
            .contains("FICTION"),
        "{schema}"
    );

    // The default selection descends into the author.
    let executed = h
        .execute(r#"return await tools.library.org.main.query.book({ id: "1" })"#)
        .await;
    assert_eq!(
        result(&executed),
        json!({"ok": true, "data": {"id": "1", "title": "The Dispossessed", "genre": "FICTION",
               "tags": ["utopia"], "year": 1974, "author": {"id": "a1", "name": "Ursula K. Le Guin"}}})
    );
    assert!(
        server.last_query().contains("author { id name }"),
        "{}",
        server.last_query()
    );

    // Enums and lists as arguments and results; `select` replaces the selection.
    let executed = h
        .execute(
            r#"
            const science = await tools.library.org.main.query.books({ genre: "SCIENCE" });
            const titles = await tools.library.org.main.query.books({ limit: 5, select: "title author { name }" });
            const hello = await tools.library.org.main.query.hello({ name: "Ada" });
            return { science: science.data.map(b => b.title), titles: titles.data, hello: hello.data };
            "#,
        )
        .await;
    assert_eq!(
        result(&executed),
        json!({"science": ["Cosmos"], "titles": [
            {"title": "The Dispossessed", "author": {"name": "Ursula K. Le Guin"}},
            {"title": "Cosmos", "author": {"name": "Carl Sagan"}}], "hello": "Hello, Ada!"})
    );

    // A `select` that does not fit the type fails before any request.
    let before = server.requests();
    let executed = h
        .execute(
            r#"return await tools.library.org.main.query.book({ id: "1", select: "title publisher { name }" })"#,
        )
        .await;
    let failed = result(&executed);
    assert_eq!(failed["ok"], false, "{failed}");
    assert_eq!(
        failed["error"]["code"], "invalid_tool_arguments",
        "{failed}"
    );
    assert_eq!(
        failed["error"]["details"]["reason"],
        "graphql_invalid_selection"
    );
    assert!(
        failed["error"]["message"]
            .as_str()
            .unwrap()
            .contains("publisher"),
        "{failed}"
    );
    assert_eq!(server.requests(), before, "no request was sent");

    // GraphQL errors: the messages and paths, and the partial data.
    let executed = h
        .execute(
            r#"
            const partial = await tools.library.org.main.query.book({ id: "1", select: "id title price(currency: \"USD\")" });
            const broken = await tools.library.org.main.query.broken({});
            return { partial, broken };
            "#,
        )
        .await;
    let out = result(&executed);
    let partial = &out["partial"];
    assert_eq!(partial["ok"], false, "{out}");
    assert_eq!(partial["error"]["code"], "graphql_errors");
    assert_eq!(partial["error"]["message"], "no price in USD");
    assert_eq!(
        partial["error"]["details"]["errors"][0]["path"],
        json!(["book", "price"])
    );
    assert_eq!(
        partial["error"]["details"]["data"]["book"]["title"],
        "The Dispossessed"
    );
    assert_eq!(out["broken"]["ok"], false);
    assert_eq!(
        out["broken"]["error"]["message"],
        "the broken field always fails"
    );

    // A mutation (input object, enum, list) pauses for approval; nothing is sent before.
    let before = server.requests();
    let code = r#"return await tools.library.org.main.mutation.addBook({ input: { title: "Dune", authorId: "a1", genre: "FICTION", tags: ["sand", "spice"] }, select: "id title genre tags author { name }" })"#;
    let paused = h.execute_gated(code).await;
    assert_eq!(paused["status"], "paused", "{paused}");
    assert!(
        paused["text"].as_str().unwrap().contains("addBook"),
        "{paused}"
    );
    assert_eq!(server.requests(), before);
    let id = paused["structured"]["executionId"].as_str().unwrap();
    let (status, done) = h.resume(id, "accept").await;
    assert_eq!(status, 200, "{done}");
    assert_eq!(
        result(&done),
        json!({"ok": true, "data": {"id": "3", "title": "Dune", "genre": "FICTION",
               "tags": ["sand", "spice"], "author": {"name": "Ursula K. Le Guin"}}})
    );
    let executed = h
        .execute(
            r#"return (await tools.library.org.main.query.books({ genre: "FICTION" })).data.length"#,
        )
        .await;
    assert_eq!(result(&executed), json!(2));

    // A refresh introspects again with the connection's token.
    let before = server.requests();
    let (status, refreshed) = h
        .post("/api/connections/org/library/main/refresh", json!({}))
        .await;
    assert_eq!(status, 200, "{refreshed}");
    assert_eq!(refreshed.as_array().unwrap().len(), 5, "{refreshed}");
    assert_eq!(server.requests(), before + 1);
    assert!(server.last_query().contains("__schema"));

    // A wrong token: the call is rejected as a connection problem.
    let (status, _) = h
        .post(
            "/api/connections",
            json!({"owner": "org", "name": "wrong", "integration": "library", "template": "header", "value": "nope"}),
        )
        .await;
    assert_eq!(status, 200);
    let executed = h
        .execute(r#"return await tools.library.org.main.query.hello({ name: "x" })"#)
        .await;
    assert_eq!(
        result(&executed)["ok"],
        true,
        "the main connection still works"
    );
    let executed = h
        .execute(r#"return await tools.library.org.wrong.query.hello({ name: "x" })"#)
        .await;
    let rejected = result(&executed);
    assert_eq!(rejected["ok"], false, "{rejected}");
    assert_eq!(
        rejected["error"]["code"], "connection_rejected",
        "{rejected}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_endpoints_are_introspected_once_at_add() {
    let server = start_server().await;
    let h = Harness::start().await;
    let (status, added) = h
        .post(
            "/api/graphql/integrations",
            json!({"endpoint": server.url("/open")}),
        )
        .await;
    assert_eq!(status, 200, "{added}");
    assert_eq!(added, json!({"slug": "127_0_0_1", "name": "127_0_0_1"}));
    assert_eq!(server.requests(), 1);
    let (_, view) = h.get("/api/graphql/integrations/127_0_0_1").await;
    assert_eq!(view["hasSchema"], true, "{view}");
    assert_eq!(view["schemaSupplied"], false, "{view}");
    assert_eq!(view["config"]["authenticationTemplate"], json!([]));

    let (status, body) = h
        .post(
            "/api/graphql/integrations",
            json!({"endpoint": server.url("/open"), "slug": "shelf", "name": "Shelf",
                   "headers": {"X-Client": "executor"}, "queryParams": {"v": "1"}}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let (_, config) = h.get("/api/graphql/integrations/shelf/config").await;
    assert_eq!(config["headers"], json!({"X-Client": "executor"}));
    assert_eq!(config["queryParams"], json!({"v": "1"}));

    // The connection uses the snapshot taken at add: no second introspection.
    let before = server.requests();
    let (status, body) = h
        .post(
            "/api/connections",
            json!({"owner": "org", "name": "main", "integration": "shelf", "template": "none", "value": ""}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(server.requests(), before);
    let executed = h
        .execute(r#"return (await tools.shelf.org.main.query.book({ id: "2" })).data.author.name"#)
        .await;
    assert_eq!(result(&executed), json!("Carl Sagan"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn endpoints_that_are_not_graphql_store_nothing() {
    let server = start_server().await;
    let h = Harness::start().await;
    let unreachable = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        format!("http://127.0.0.1:{port}/graphql")
    };
    let cases = [
        (server.url("/html"), "does not look like a GraphQL endpoint"),
        (server.url("/json"), "does not look like a GraphQL endpoint"),
        (unreachable, "Could not run the GraphQL introspection query"),
        ("ftp://example.com/graphql".to_owned(), "not an http(s) URL"),
        ("not a url".to_owned(), "not a valid GraphQL endpoint URL"),
    ];
    for (endpoint, says) in cases {
        let (status, body) = h
            .post(
                "/api/graphql/integrations",
                json!({"endpoint": endpoint, "slug": "bad"}),
            )
            .await;
        assert_eq!(status, 400, "{endpoint}: {body}");
        assert_eq!(body["_tag"], "GraphqlIntrospectionError", "{body}");
        assert!(
            body["message"].as_str().unwrap().contains(says),
            "{endpoint}: {body}"
        );
    }
    // A supplied introspection JSON that is not one, as JSON and as text.
    for json in [json!({"hello": 1}), json!("{\"hello\": 1}"), json!("{oops")] {
        let (status, body) = h
            .post(
                "/api/graphql/integrations",
                json!({"endpoint": server.url("/open"), "slug": "bad", "introspectionJson": json}),
            )
            .await;
        assert_eq!(status, 400, "{body}");
        assert_eq!(body["_tag"], "GraphqlIntrospectionError", "{body}");
    }
    assert_eq!(integrations(&h).await, ["executor"], "nothing stored");
    let (status, body) = h.get("/api/graphql/integrations/bad").await;
    assert_eq!((status, body), (200, Value::Null));
    let (status, body) = h.get("/api/graphql/integrations/bad/config").await;
    assert_eq!((status, body), (200, Value::Null));

    // Bad payloads are schema errors.
    for payload in [
        json!({"slug": "x"}),
        json!({"endpoint": ""}),
        json!({"endpoint": server.url("/open"), "authenticationTemplate": [{"type": "apiKey", "headers": {"X": [{"type": "variable", "name": "a"}, "tail"]}}]}),
        json!({"endpoint": server.url("/open"), "authenticationTemplate": [{"type": "digest"}]}),
        json!({"endpoint": server.url("/open"), "slug": "has.dot"}),
    ] {
        let (status, body) = h.post("/api/graphql/integrations", payload.clone()).await;
        assert_eq!(status, 400, "{payload}: {body}");
        assert_eq!(body["_tag"], "HttpApiSchemaError", "{payload}: {body}");
    }
    assert_eq!(integrations(&h).await, ["executor"], "nothing stored");

    // A duplicate slug is a conflict, found before the endpoint is dialled.
    let (status, _) = h
        .post(
            "/api/graphql/integrations",
            json!({"endpoint": server.url("/open"), "slug": "lib"}),
        )
        .await;
    assert_eq!(status, 200);
    let before = server.requests();
    let (status, body) = h
        .post(
            "/api/graphql/integrations",
            json!({"endpoint": server.url("/open"), "slug": "lib"}),
        )
        .await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(
        body,
        json!({"_tag": "IntegrationAlreadyExistsError", "message": "An integration \"lib\" already exists; choose another slug.", "slug": "lib"})
    );
    assert_eq!(server.requests(), before);
    // An MCP route does not show a GraphQL integration, nor the GraphQL route an unknown one.
    let (_, body) = h.get("/api/mcp/servers/lib").await;
    assert_eq!(body, Value::Null);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auth_config_merge_and_replace() {
    let server = start_server().await;
    let h = Harness::start().await;
    let (status, _) = h
        .post(
            "/api/graphql/integrations",
            json!({"endpoint": server.url("/graphql"), "slug": "lib", "authenticationTemplate": bearer_template()}),
        )
        .await;
    assert_eq!(status, 200);

    // Merge: a method with an existing slug replaces it in place, one without a slug is added.
    let (status, body) = h
        .post(
            "/api/graphql/integrations/lib/config",
            json!({"authenticationTemplate": [
                {"slug": "header", "type": "apiKey", "label": "Token", "headers": {"Authorization": ["Bearer ", {"type": "variable", "name": "token"}]}},
                {"type": "apiKey", "queryParams": {"key": [{"type": "variable", "name": "key"}]}}
            ]}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let methods = body["authenticationTemplate"].as_array().unwrap();
    assert_eq!(methods.len(), 2, "{body}");
    assert_eq!(methods[0]["slug"], "header");
    assert_eq!(methods[0]["label"], "Token");
    let custom = methods[1]["slug"].as_str().unwrap();
    assert!(
        custom.starts_with("custom_") && custom.len() == "custom_".len() + 6,
        "{custom}"
    );
    assert_eq!(
        methods[1]["placements"],
        json!([{"carrier": "query", "name": "key", "variable": "key"}])
    );
    let (_, config) = h.get("/api/graphql/integrations/lib/config").await;
    assert_eq!(
        config["authenticationTemplate"],
        body["authenticationTemplate"]
    );

    // Replace: the list becomes exactly what was sent (stored form accepted as input too).
    let (status, body) = h
        .post(
            "/api/graphql/integrations/lib/config",
            json!({"mode": "replace", "authenticationTemplate": [{"kind": "none", "slug": "none"}, {"type": "oauth2"}]}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body,
        json!({"authenticationTemplate": [{"kind": "none", "slug": "none"}, {"kind": "oauth2", "slug": "oauth2"}]})
    );
    let (_, integration) = h.get("/api/integrations/lib").await;
    assert_eq!(integration["authMethods"][1]["kind"], "oauth");

    for (payload, status_expected, tag) in [
        (
            json!({"mode": "sideways", "authenticationTemplate": []}),
            400,
            "HttpApiSchemaError",
        ),
        (json!({}), 400, "HttpApiSchemaError"),
        (
            json!({"authenticationTemplate": [{"type": "apiKey"}]}),
            400,
            "HttpApiSchemaError",
        ),
    ] {
        let (status, body) = h
            .post("/api/graphql/integrations/lib/config", payload.clone())
            .await;
        assert_eq!(status, status_expected, "{payload}: {body}");
        assert_eq!(body["_tag"], tag, "{payload}: {body}");
    }
    let (status, body) = h
        .post(
            "/api/graphql/integrations/nope/config",
            json!({"authenticationTemplate": []}),
        )
        .await;
    assert_eq!(status, 404, "{body}");
    assert_eq!(
        body,
        json!({"_tag": "IntegrationNotFoundError", "message": "No integration \"nope\".", "slug": "nope"})
    );
}

fn github_fixture() -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../executor-graphql/tests/fixtures/github.introspection.json");
    std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "missing large-schema fixture {} ({e}): run `bash crates/executor-graphql/tests/fixtures/install.sh` first",
            path.display()
        )
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn github_schema_imports_through_the_api_and_searches() {
    let introspection: Value = serde_json::from_str(&github_fixture()).unwrap();
    let h = Harness::start().await;
    // A closed loopback port: nothing may be dialled when the schema is supplied.
    let endpoint = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        format!("http://127.0.0.1:{port}/graphql")
    };

    let started = Instant::now();
    let (status, added) = h
        .post(
            "/api/graphql/integrations",
            json!({"endpoint": endpoint, "slug": "github", "name": "GitHub",
                   "introspectionJson": introspection, "authenticationTemplate": bearer_template()}),
        )
        .await;
    let imported = started.elapsed();
    assert_eq!(status, 200, "{added}");
    let (_, view) = h.get("/api/graphql/integrations/github").await;
    assert_eq!(view["schemaSupplied"], true, "{view}");

    let started = Instant::now();
    let (status, connection) = h
        .post(
            "/api/connections",
            json!({"owner": "org", "name": "main", "integration": "github", "template": "header", "value": "ghp_not_a_real_token"}),
        )
        .await;
    let connected = started.elapsed();
    assert_eq!(status, 200, "{connection}");
    assert_eq!(connection["lastHealth"], Value::Null, "{connection}");
    let (_, tools) = h.get("/api/tools?integration=github").await;
    let count = tools.as_array().unwrap().len();
    assert!(count > 250, "{count}");

    let started = Instant::now();
    let executed = h
        .execute(
            r#"
            const top = async (query, limit) =>
              (await tools.search({ query, limit })).items.map(i => i.path);
            return {
              createIssue: await top("create issue", 3),
              repository: await top("look up a repository by owner and name", 3),
              star: await top("add star", 3),
              merge: await top("merge pull request", 3),
            };
            "#,
        )
        .await;
    let searched = started.elapsed();
    let found = result(&executed);
    println!(
        "github via the API: {count} tools; add {imported:?}, connection (tools produced) {connected:?}, 4 searches in one execution {searched:?}"
    );
    for (key, expected) in [
        ("createIssue", "github.org.main.mutation.createIssue"),
        ("repository", "github.org.main.query.repository"),
        ("star", "github.org.main.mutation.addStar"),
        ("merge", "github.org.main.mutation.mergePullRequest"),
    ] {
        assert!(
            found[key].as_array().unwrap().iter().any(|p| p == expected),
            "{key}: {found}"
        );
    }

    // Describe renders the shared input type; a refresh keeps the supplied snapshot (no dial).
    let executed = h
        .execute(
            r#"return await tools.describe.tool({ path: "github.org.main.mutation.createIssue" })"#,
        )
        .await;
    let described = result(&executed);
    assert!(
        described["typeScriptDefinitions"]["CreateIssueInput"]
            .as_str()
            .is_some_and(|ts| ts.contains("repositoryId")),
        "{described}"
    );
    let (status, refreshed) = h
        .post("/api/connections/org/github/main/refresh", json!({}))
        .await;
    assert_eq!(status, 200);
    assert_eq!(refreshed.as_array().unwrap().len(), count);
    let (_, connection) = h.get("/api/connections/org/github/main").await;
    assert_eq!(connection["lastHealth"], Value::Null, "{connection}");
}

/// Issue #18 (14): a connection whose token the endpoint refuses cannot list its tools; calling
/// one answers `connection_rejected` with the status, not `tool_not_found`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_token_is_connection_rejected() {
    let server = start_server().await;
    let h = Harness::start().await;
    let (status, added) = h
        .post(
            "/api/graphql/integrations",
            json!({"endpoint": server.url("/graphql"), "slug": "library",
                   "authenticationTemplate": bearer_template()}),
        )
        .await;
    assert_eq!(status, 200, "{added}");
    let (status, connection) = h
        .post(
            "/api/connections",
            json!({"owner": "org", "name": "main", "integration": "library", "template": "header", "value": "wrong"}),
        )
        .await;
    assert_eq!(status, 200, "{connection}");
    let called = h
        .execute(r#"return await tools.library.org.main.query.hello({ name: "x" })"#)
        .await;
    let error = &result(&called)["error"];
    assert_eq!(error["code"], "connection_rejected", "{called}");
    assert_eq!(error["status"], 401, "{called}");
    assert_eq!(error["details"]["category"], "authentication");
}
