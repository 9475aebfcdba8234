//! Against a real GraphQL server (async-graphql over axum on 127.0.0.1:0): introspect, extract,
//! invoke with default and custom selections, a mutation, errors with partial data, pre-flight
//! rejections (no request sent), auth, and endpoints that are not GraphQL.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_graphql::{
    ComplexObject, Context, EmptySubscription, Enum, ID, InputObject, Object, SimpleObject, Union,
};
use async_graphql_axum::{GraphQLRequest, GraphQLResponse};
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use executor_core::outcome::{ToolError, ToolOutcome};
use executor_graphql::{
    Binding, GraphqlError, GraphqlTool, Schema, extract, introspect, invoke, invoke_with_schema,
    render_operation, validate_args,
};
use serde_json::{Value, json};

const TOKEN: &str = "Bearer s3cret";
const TIMEOUT: Duration = Duration::from_secs(10);

// ---------------------------------------------------------------------------------------------
// The server

#[derive(Enum, Copy, Clone, Eq, PartialEq, Debug)]
enum Genre {
    Fiction,
    Science,
    History,
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
#[graphql(complex)]
struct Author {
    id: ID,
    name: String,
}

#[derive(Union)]
enum SearchResult {
    Book(Book),
    Author(Author),
}

/// A new book.
#[derive(InputObject)]
struct BookInput {
    title: String,
    author_id: ID,
    genre: Genre,
    tags: Option<Vec<String>>,
    year: Option<i32>,
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
        let lib = library(ctx);
        lib.authors
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

#[ComplexObject]
impl Author {
    async fn books(&self, ctx: &Context<'_>) -> Vec<Book> {
        let lib = library(ctx);
        let books = lib.books.lock().unwrap();
        books
            .iter()
            .filter(|b| b.author_id == self.id.0)
            .cloned()
            .collect()
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

    async fn authors(&self, ctx: &Context<'_>) -> Vec<Author> {
        library(ctx).authors.clone()
    }

    async fn hello(&self, name: String) -> String {
        format!("Hello, {name}!")
    }

    /// Books and authors whose title or name contains the text.
    async fn search(&self, ctx: &Context<'_>, text: String) -> Vec<SearchResult> {
        let lib = library(ctx);
        let mut out: Vec<SearchResult> = lib
            .books
            .lock()
            .unwrap()
            .iter()
            .filter(|b| b.title.contains(&text))
            .cloned()
            .map(SearchResult::Book)
            .collect();
        out.extend(
            lib.authors
                .iter()
                .filter(|a| a.name.contains(&text))
                .cloned()
                .map(SearchResult::Author),
        );
        out
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
            year: input.year,
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
    last_query: Arc<Mutex<Option<String>>>,
}

async fn graphql_handler(
    State(state): State<AppState>,
    RawQuery(raw_query): RawQuery,
    headers: HeaderMap,
    request: GraphQLRequest,
) -> Response {
    state.requests.fetch_add(1, Ordering::SeqCst);
    *state.last_query.lock().unwrap() = raw_query;
    if headers.get("authorization").and_then(|v| v.to_str().ok()) != Some(TOKEN) {
        return (StatusCode::UNAUTHORIZED, "missing or wrong bearer token").into_response();
    }
    GraphQLResponse::from(state.schema.execute(request.into_inner()).await).into_response()
}

struct Server {
    base: String,
    requests: Arc<AtomicUsize>,
    last_query: Arc<Mutex<Option<String>>>,
}

impl Server {
    fn graphql(&self) -> String {
        format!("{}/graphql", self.base)
    }

    fn requests(&self) -> usize {
        self.requests.load(Ordering::SeqCst)
    }
}

async fn start() -> Server {
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
    let schema = LibrarySchema::build(QueryRoot, MutationRoot, EmptySubscription)
        .data(lib)
        .finish();
    let state = AppState {
        schema,
        requests: Arc::new(AtomicUsize::new(0)),
        last_query: Arc::new(Mutex::new(None)),
    };
    let app = Router::new()
        .route("/graphql", post(graphql_handler))
        .route(
            "/html",
            get(|| async { Html("<!DOCTYPE html><html><body>Welcome</body></html>") })
                .post(|| async { Html("<!DOCTYPE html><html><body>Welcome</body></html>") }),
        )
        .route("/json", post(|| async { Json(json!({"hello": "world"})) }))
        .with_state(state.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr: SocketAddr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        axum::serve(listener, app).await.unwrap();
    });
    Server {
        base: format!("http://{addr}"),
        requests: state.requests,
        last_query: state.last_query,
    }
}

// ---------------------------------------------------------------------------------------------
// Helpers

fn auth() -> BTreeMap<String, String> {
    BTreeMap::from([("Authorization".to_owned(), TOKEN.to_owned())])
}

fn no_query() -> BTreeMap<String, String> {
    BTreeMap::new()
}

async fn schema_of(server: &Server) -> Schema {
    introspect(
        &reqwest::Client::new(),
        &server.graphql(),
        &auth(),
        &no_query(),
    )
    .await
    .expect("introspection")
}

fn tool<'a>(tools: &'a [GraphqlTool], name: &str) -> &'a GraphqlTool {
    tools
        .iter()
        .find(|t| t.name == name)
        .unwrap_or_else(|| panic!("no tool {name}"))
}

fn ok(outcome: ToolOutcome) -> Value {
    match outcome {
        ToolOutcome::Ok { data, .. } => data,
        ToolOutcome::Err(e) => panic!("expected ok, got {e:?}"),
    }
}

fn err(outcome: ToolOutcome) -> ToolError {
    match outcome {
        ToolOutcome::Err(e) => e,
        ToolOutcome::Ok { data, .. } => panic!("expected an error, got {data}"),
    }
}

async fn call(server: &Server, tools: &[GraphqlTool], name: &str, args: Value) -> ToolOutcome {
    invoke(
        &reqwest::Client::new(),
        &server.graphql(),
        &tool(tools, name).binding,
        args,
        &auth(),
        &no_query(),
        TIMEOUT,
    )
    .await
}

// ---------------------------------------------------------------------------------------------
// Tests

#[tokio::test]
async fn introspects_and_extracts_tools() {
    let server = start().await;
    let schema = schema_of(&server).await;
    let (tools, defs) = extract(&schema);
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "query.book",
            "query.books",
            "query.authors",
            "query.hello",
            "query.search",
            "query.broken",
            "mutation.addBook"
        ]
    );

    let book = tool(&tools, "query.book");
    assert_eq!(book.description, "One book by id.");
    assert!(!book.requires_approval);
    assert_eq!(
        book.input_schema,
        json!({
            "type": "object",
            "properties": {
                "id": {"type": "string"},
                "select": {
                    "type": "string",
                    "description": "GraphQL selection set for the returned Book (without the outer braces), replacing the default: `id title genre tags year author { id name }`"
                }
            },
            "required": ["id"],
            "additionalProperties": false
        })
    );
    let binding = Binding::from_value(&book.binding).unwrap();
    assert_eq!(
        book.binding,
        json!({
            "kind": "query",
            "field": "book",
            "returnType": "Book",
            "args": [{"name": "id", "type": "ID!", "required": true}],
            "selection": "id title genre tags year author { id name }"
        })
    );
    assert!(binding.accepts_select());
    // Output schema follows the default selection; enums are shared definitions.
    let out = book.output_schema.as_ref().unwrap();
    assert_eq!(out["properties"]["genre"], json!({"$ref": "#/$defs/Genre"}));
    assert_eq!(
        out["properties"]["tags"],
        json!({"type": "array", "items": {"type": "string"}})
    );
    assert_eq!(
        out["properties"]["author"]["properties"]["name"],
        json!({"type": "string"})
    );

    let books = tool(&tools, "query.books");
    assert_eq!(
        books.input_schema["properties"]["genre"]["$ref"],
        "#/$defs/Genre"
    );
    assert_eq!(books.input_schema["properties"]["limit"]["default"], 10);
    assert!(books.input_schema.get("required").is_none());

    let add = tool(&tools, "mutation.addBook");
    assert!(add.requires_approval);
    assert_eq!(
        add.approval_description.as_deref(),
        Some("mutation addBook")
    );
    assert_eq!(add.description, "Adds a book to the library.");
    assert_eq!(
        add.input_schema["properties"]["input"],
        json!({"$ref": "#/$defs/BookInput"})
    );
    assert_eq!(
        defs["BookInput"],
        json!({
            "type": "object",
            "properties": {
                "title": {"type": "string"},
                "authorId": {"type": "string"},
                "genre": {"$ref": "#/$defs/Genre"},
                "tags": {"type": "array", "items": {"type": "string"}},
                "year": {"type": "integer"}
            },
            "required": ["title", "authorId", "genre"],
            "additionalProperties": false,
            "description": "A new book."
        })
    );
    assert_eq!(
        defs["Genre"],
        json!({"type": "string", "enum": ["FICTION", "SCIENCE", "HISTORY"]})
    );

    // Scalars returned take no `select`; unions select `__typename` and members' leaves.
    let hello = tool(&tools, "query.hello");
    assert!(hello.input_schema["properties"].get("select").is_none());
    assert_eq!(hello.description, "GraphQL query: hello -> String!");
    let search = Binding::from_value(&tool(&tools, "query.search").binding).unwrap();
    assert_eq!(
        search.selection.as_deref(),
        Some("__typename ... on Book { id title genre tags year } ... on Author { id name }")
    );

    // The snapshot round-trips.
    let stored = executor_graphql::to_json(&schema);
    assert_eq!(executor_graphql::from_json(&stored).unwrap(), schema);
}

#[tokio::test]
async fn invokes_queries_with_default_and_custom_selections() {
    let server = start().await;
    let schema = schema_of(&server).await;
    let (tools, _) = extract(&schema);

    let book = ok(call(&server, &tools, "query.book", json!({"id": "1"})).await);
    assert_eq!(
        book,
        json!({
            "id": "1",
            "title": "The Dispossessed",
            "genre": "FICTION",
            "tags": ["utopia"],
            "year": 1974,
            "author": {"id": "a1", "name": "Ursula K. Le Guin"}
        })
    );

    let custom = ok(call(
        &server,
        &tools,
        "query.book",
        json!({"id": "2", "select": "title author { name books { title } } price(currency: \"EUR\")"}),
    )
    .await);
    assert_eq!(
        custom,
        json!({"title": "Cosmos", "author": {"name": "Carl Sagan", "books": [{"title": "Cosmos"}]}, "price": 12.5})
    );

    let science = ok(call(&server, &tools, "query.books", json!({"genre": "SCIENCE"})).await);
    assert_eq!(science.as_array().unwrap().len(), 1);
    assert_eq!(science[0]["title"], "Cosmos");
    assert_eq!(science[0]["year"], Value::Null);

    let hello = ok(call(&server, &tools, "query.hello", json!({"name": "Ada"})).await);
    assert_eq!(hello, json!("Hello, Ada!"));

    let found = ok(call(&server, &tools, "query.search", json!({"text": "Ca"})).await);
    assert_eq!(
        found,
        json!([{"__typename": "Author", "id": "a2", "name": "Carl Sagan"}])
    );

    // Static query parameters ride on the URL.
    let params = BTreeMap::from([("tenant".to_owned(), "acme corp".to_owned())]);
    let outcome = invoke(
        &reqwest::Client::new(),
        &server.graphql(),
        &tool(&tools, "query.authors").binding,
        json!({}),
        &auth(),
        &params,
        TIMEOUT,
    )
    .await;
    assert_eq!(ok(outcome).as_array().unwrap().len(), 2);
    assert_eq!(
        server.last_query.lock().unwrap().as_deref(),
        Some("tenant=acme+corp")
    );
}

#[tokio::test]
async fn runs_a_mutation() {
    let server = start().await;
    let (tools, _) = extract(&schema_of(&server).await);
    let added = ok(call(
        &server,
        &tools,
        "mutation.addBook",
        json!({"input": {"title": "Pale Blue Dot", "authorId": "a2", "genre": "SCIENCE", "tags": ["space"]}}),
    )
    .await);
    assert_eq!(added["id"], "3");
    assert_eq!(added["title"], "Pale Blue Dot");
    assert_eq!(added["author"]["name"], "Carl Sagan");
    let science = ok(call(
        &server,
        &tools,
        "query.books",
        json!({"genre": "SCIENCE", "select": "title"}),
    )
    .await);
    assert_eq!(
        science,
        json!([{"title": "Cosmos"}, {"title": "Pale Blue Dot"}])
    );

    // The operation sent: variables typed from the schema, default selection inside.
    let (text, variables) = render_operation(
        None,
        &tool(&tools, "mutation.addBook").binding,
        &json!({"input": {"title": "T", "authorId": "a1", "genre": "HISTORY"}}),
    )
    .unwrap();
    assert_eq!(
        text,
        "mutation($input: BookInput!) { addBook(input: $input) { id title genre tags year author { id name } } }"
    );
    assert_eq!(variables["input"]["genre"], "HISTORY");
    let (text, variables) = render_operation(
        None,
        &tool(&tools, "query.books").binding,
        &json!({"limit": 1, "genre": null, "select": "id"}),
    )
    .unwrap();
    assert_eq!(
        text,
        "query($genre: Genre, $limit: Int!) { books(genre: $genre, limit: $limit) { id } }"
    );
    assert_eq!(variables, json!({"genre": null, "limit": 1}));
}

#[tokio::test]
async fn graphql_errors_keep_messages_paths_and_partial_data() {
    let server = start().await;
    let (tools, _) = extract(&schema_of(&server).await);
    let e = err(call(
        &server,
        &tools,
        "query.book",
        json!({"id": "1", "select": "id title price(currency: \"USD\")"}),
    )
    .await);
    assert_eq!(e.code, "graphql_errors");
    assert_eq!(e.message, "no price in USD");
    let details = e.details.unwrap();
    assert_eq!(details["errors"][0]["path"], json!(["book", "price"]));
    // `price` is nullable: the rest of the data is kept (async-graphql leaves the failed field
    // out rather than writing null).
    assert_eq!(details["data"]["book"]["id"], "1");
    assert_eq!(details["data"]["book"]["title"], "The Dispossessed");

    let e = err(call(&server, &tools, "query.broken", json!({})).await);
    assert_eq!(e.code, "graphql_errors");
    assert_eq!(e.message, "the broken field always fails");
    assert_eq!(e.details.unwrap()["errors"][0]["path"], json!(["broken"]));

    // A server-side validation failure (bad enum value) is a GraphQL error too.
    let e = err(call(&server, &tools, "query.books", json!({"genre": "POETRY"})).await);
    assert_eq!(e.code, "graphql_errors");
    assert!(e.message.contains("POETRY"), "{}", e.message);
}

#[tokio::test]
async fn bad_arguments_are_rejected_before_any_request() {
    let server = start().await;
    let schema = schema_of(&server).await;
    let (tools, _) = extract(&schema);
    let before = server.requests();
    let http = reqwest::Client::new();
    let book = &tool(&tools, "query.book").binding;

    let cases: Vec<(Value, &str)> = vec![
        (
            json!({"id": "1", "select": "id nope"}),
            "type Book has no field \"nope\"",
        ),
        (json!({"id": "1", "select": "author"}), "select its fields"),
        (
            json!({"id": "1", "select": "title { x }"}),
            "has no fields to select",
        ),
        (
            json!({"id": "1", "select": "price"}),
            "needs argument \"currency\"",
        ),
        (
            json!({"id": "1", "select": "author { nope }"}),
            "type Author has no field \"nope\"",
        ),
        (
            json!({"id": "1", "select": "... on Author { name }"}),
            "can never apply",
        ),
        (
            json!({"id": "1", "select": "id {"}),
            "not a GraphQL selection set",
        ),
        (
            json!({"id": "1", "select": "id } mutation { addBook"}),
            "Invalid `select`",
        ),
        (
            json!({"id": "1", "select": "id } } query { authors { name }"}),
            "Invalid `select`",
        ),
        (
            json!({"id": "1", "select": "price(currency: $c)"}),
            "variables are not supported",
        ),
        (json!({"id": "1", "select": "...F"}), "named fragments"),
        (json!({"id": "1", "select": 3}), "must be a string"),
        (
            json!({"id": "1", "bogus": true}),
            "Unknown argument \"bogus\". This field accepts: id, select.",
        ),
        (json!({}), "Missing required argument \"id\" (ID!)."),
        (json!({"id": null}), "Missing required argument \"id\""),
        (json!([1]), "must be an object"),
    ];
    for (args, expected) in cases {
        let e = validate_args(Some(&schema), book, &args)
            .err()
            .unwrap_or_else(|| panic!("{args} should be rejected"));
        assert_eq!(e.code, "invalid_tool_arguments", "{args}");
        assert!(e.message.contains(expected), "{args}: {}", e.message);
        let outcome = invoke_with_schema(
            &http,
            &server.graphql(),
            Some(&schema),
            book,
            args.clone(),
            &auth(),
            &no_query(),
            TIMEOUT,
        )
        .await;
        let e = err(outcome);
        assert_eq!(e.code, "invalid_tool_arguments", "{args}");
        println!("{args} -> {}", e.message);
    }
    // Without the schema, syntax and argument checks still hold.
    for args in [
        json!({"id": "1", "select": "id {"}),
        json!({"id": "1", "select": "id } mutation { addBook"}),
        json!({"bogus": 1}),
    ] {
        let e = err(call(&server, &tools, "query.book", args).await);
        assert_eq!(e.code, "invalid_tool_arguments");
    }
    assert!(validate_args(Some(&schema), book, &json!({"id": "1", "select": "title author { name books { id } } __typename price(currency: \"EUR\") ... on Book { year }"})).is_ok());
    assert_eq!(server.requests(), before, "no request may reach the server");

    let selectless = &tool(&tools, "query.hello").binding;
    let e = validate_args(
        Some(&schema),
        selectless,
        &json!({"name": "x", "select": "a"}),
    )
    .unwrap_err();
    assert_eq!(
        e.message,
        "Unknown argument \"select\". This field accepts: name."
    );
}

#[tokio::test]
async fn wrong_credentials_are_connection_rejected() {
    let server = start().await;
    let schema = schema_of(&server).await;
    let (tools, _) = extract(&schema);
    let wrong = BTreeMap::from([("Authorization".to_owned(), "Bearer nope".to_owned())]);
    let e = err(invoke(
        &reqwest::Client::new(),
        &server.graphql(),
        &tool(&tools, "query.authors").binding,
        json!({}),
        &wrong,
        &no_query(),
        TIMEOUT,
    )
    .await);
    assert_eq!(e.code, "connection_rejected");
    assert_eq!(e.status, Some(401));
    assert_eq!(e.retryable, Some(false));
    assert_eq!(e.details.as_ref().unwrap()["category"], "authentication");
    assert!(
        e.message.contains("missing or wrong bearer token"),
        "{}",
        e.message
    );

    let e = introspect(
        &reqwest::Client::new(),
        &server.graphql(),
        &wrong,
        &no_query(),
    )
    .await
    .unwrap_err();
    assert!(e.is_auth_rejection(), "{e:?}");
    assert!(e.to_string().contains("401"), "{e}");
}

#[tokio::test]
async fn endpoints_that_are_not_graphql_fail_introspection_clearly() {
    let server = start().await;
    let http = reqwest::Client::new();
    for (path, expected) in [
        ("/missing", "HTTP 404"),
        ("/html", "text/html"),
        ("/json", "neither `data` nor `errors`"),
    ] {
        let endpoint = format!("{}{path}", server.base);
        let e = introspect(&http, &endpoint, &auth(), &no_query())
            .await
            .unwrap_err();
        let GraphqlError::Introspection(message) = &e else {
            panic!("expected an introspection error for {path}, got {e:?}");
        };
        println!("{path}: {message}");
        assert!(
            message.contains("does not look like a GraphQL endpoint"),
            "{message}"
        );
        assert!(message.contains(expected), "{path}: {message}");
    }
    // Nothing listens here.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead = format!("http://{}/graphql", listener.local_addr().unwrap());
    drop(listener);
    let e = introspect(&http, &dead, &auth(), &no_query())
        .await
        .unwrap_err();
    assert!(matches!(e, GraphqlError::Unreachable(_)), "{e:?}");
    assert!(
        e.to_string()
            .contains("Could not run the GraphQL introspection query"),
        "{e}"
    );
}
