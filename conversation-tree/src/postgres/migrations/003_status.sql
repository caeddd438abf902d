-- Schema version 3: how the call behind each node ended. A run that is cancelled or fails
-- mid-answer still logs what had arrived, so the conversation can continue from it; rows
-- written before this version were all complete answers.

ALTER TABLE responses ADD COLUMN status TEXT NOT NULL DEFAULT 'completed'
    CHECK (status IN ('completed', 'cancelled', 'failed'));
