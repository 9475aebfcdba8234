-- Schema version 6: a connection being created is written with `pending_create = 1` and cleared
-- once its tools were produced (or its sync failure recorded), i.e. when the create is answered.
-- A row still pending when a server starts belongs to a create that was never acknowledged (the
-- process died during it): it is removed then, so a create leaves all or nothing.
ALTER TABLE connection ADD COLUMN pending_create INTEGER NOT NULL DEFAULT 0;
