-- Schema version 12: secrets are keyed by their owner (issue #39). `subject` is '' for the
-- organisation's items and the user's id for a personal one, so two members' personal items
-- of one id are two rows, and each is sealed bound to its owner.
--
-- Rows of older builds carry no owner: they move to `secret_unowned`, and the store gives each
-- to its owner when it opens (from the connections and OAuth apps that wrote it). A row it
-- cannot attribute stays there, used by no one, with the reason in `unattributed`, and the
-- store logs it at every start until an operator removes it.
ALTER TABLE secret RENAME TO secret_unowned;
ALTER INDEX secret_pkey RENAME TO secret_unowned_pkey;
ALTER TABLE secret_unowned ADD COLUMN unattributed TEXT;
DROP TRIGGER secret_changed ON secret_unowned;

CREATE TABLE secret (
    tenant     TEXT COLLATE "C" NOT NULL,
    subject    TEXT COLLATE "C" NOT NULL,
    item_id    TEXT COLLATE "C" NOT NULL,
    value      TEXT   NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (tenant, subject, item_id)
);

CREATE TRIGGER secret_changed AFTER INSERT OR UPDATE OR DELETE ON secret
    FOR EACH STATEMENT EXECUTE FUNCTION executor_catalog_changed();
