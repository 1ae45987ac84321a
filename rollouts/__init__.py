"""The rollout core: one episode (`loop`, `records`, `policy`, `history`) and many (`jobs`, `batch`, `tasks`,
`output`, `summary`, `generate`). The public names are in `rollgym` itself (`import rollgym as rg`);
docs/concepts.md#layers draws the layers around it."""
