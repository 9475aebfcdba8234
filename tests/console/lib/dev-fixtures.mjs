// For developing the console by hand: starts the fixtures and prints their URLs until killed.
import { serveGraphql, serveMcp, serveNotes, NOTES_KEY, GRAPHQL_TOKEN } from "./fixtures.mjs";
const mcp = await serveMcp();
const notes = await serveNotes();
const gql = await serveGraphql();
console.log(JSON.stringify({ mcp: mcp.url, notes: notes.specUrl, notesKey: NOTES_KEY, graphql: gql.url, graphqlToken: GRAPHQL_TOKEN }));
