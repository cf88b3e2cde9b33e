-- Judgment files from GPU workers (the judge exchange folder), merged into `judgments` once each.

CREATE TABLE merged_result_files (
    file_key          VARCHAR PRIMARY KEY,   -- path relative to the exchange folder
    digest            VARCHAR NOT NULL,      -- blake2b of the file's bytes
    rows              INTEGER NOT NULL,
    merged_at         TIMESTAMP NOT NULL
);
