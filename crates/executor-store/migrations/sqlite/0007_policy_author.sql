-- Who wrote each tool policy: a person (HTTP API, console) or an agent (a core tool called from
-- an execution). An agent's rule never loosens a person's block; existing rules are people's.
ALTER TABLE tool_policy ADD COLUMN author TEXT NOT NULL DEFAULT 'person'
    CHECK (author IN ('person', 'agent'));
