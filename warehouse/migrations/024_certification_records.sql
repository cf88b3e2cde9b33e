-- What a certification must remember between runs (docs/certification.md):
-- * `trained_labels`: the pairs whose label trained a judge run's escalation in rounds, per judge configuration.
--   A version built on those verdicts may never use one of them as a calibration label (the rounds chose which
--   pairs to ask more of by reading it).
-- * `label_roles`: the split of labels the rounds of a judge configuration decided by (the calibration's kind,
--   its share, the audit threshold), recorded at the first round.
-- * `certification_attempts`: every test of a target on a judge configuration's calibration labels, with its
--   keys and outcome; the k-th distinct attempt is tested at its share of the risk (an alpha-spending schedule).
CREATE TABLE trained_labels (
    config_id  VARCHAR NOT NULL,
    pair_id    VARCHAR NOT NULL,
    first_at   TIMESTAMP NOT NULL,
    PRIMARY KEY (config_id, pair_id)
);

CREATE TABLE label_roles (
    config_id          VARCHAR PRIMARY KEY,
    kind               VARCHAR NOT NULL,    -- audit | source
    calibration_share  DOUBLE NOT NULL,
    min_audit_reviews  INTEGER NOT NULL,
    recorded_at        TIMESTAMP NOT NULL
);

CREATE TABLE certification_attempts (
    config_id     VARCHAR NOT NULL,
    attempt_key   VARCHAR NOT NULL,   -- blake2b of the target, the risk, the keys and the calibration labels' digest
    attempt       INTEGER NOT NULL,   -- 1, 2, ... in the order first made on this configuration
    labels_kind   VARCHAR NOT NULL,
    labels_digest VARCHAR NOT NULL,
    target        DOUBLE NOT NULL,
    risk          DOUBLE NOT NULL,    -- the risk the policy states (the whole budget)
    risk_spent    DOUBLE NOT NULL,    -- the risk this attempt was tested at
    keys          JSON NOT NULL,
    certified     BOOLEAN NOT NULL,
    created_at    TIMESTAMP NOT NULL,
    PRIMARY KEY (config_id, attempt_key)
);
