import { Suspense, lazy, useState, type FormEvent } from "react";
import { client, data } from "../../lib/api";
import { Link, navigate, useLocation } from "../../lib/router";
import { ErrorNote, useLoad, useNarrow, useTitle } from "../../components/common";
import { Thumbnail, pictureOf } from "../../components/extent";

// The area map's code loads only when it is opened: the catalog is the first page.
const AreaPicker = lazy(() => import("./areapicker"));

type Facets = Record<string, Record<string, number>>;
const FACETS: [string, string][] = [
  ["geometry_type", "Geometry"],
  ["visibility", "Visibility"],
  ["keyword", "Keyword"],
  ["owner", "Owner"],
  ["format", "Format"],
];
const PAGE = 20;
const ORDERS: [string, string][] = [
  ["relevance", "Best match"],
  ["newest", "Newest"],
  ["title", "Title (A to Z)"],
  ["size", "Most features"],
];
/** The catalog: search words and facet filters live in the address, so a search can be shared. */
export function Catalog() {
  useTitle("Datasets");
  const location = useLocation();
  const params = location.searchParams;
  const [words, setWords] = useState(params.get("q") ?? "");
  // The address's query goes to the API as it is: its words and filters are the search's.
  const query = params.toString();
  const results = useLoad(
    () => data(client.GET("/search/datasets", { querySerializer: () => `limit=${PAGE}&${query}` })),
    [query],
  );
  const facets = useLoad(() => data<Facets>(client.GET("/search/facets", { querySerializer: () => query })), [query]);

  const change = (name: string, value: string | null) => {
    const next = new URLSearchParams(params);
    if (value) next.set(name, value);
    else next.delete(name);
    next.delete("offset");
    navigate(`/datasets?${next}`);
  };
  const search = (e: FormEvent) => {
    e.preventDefault();
    change("q", words.trim() || null);
  };
  const offset = Number(params.get("offset") ?? 0);
  const total = results.value?.total ?? 0;
  const narrow = useNarrow();
  const [showFilters, setShowFilters] = useState(false);
  const [picking, setPicking] = useState(false);
  const area = params.get("bbox");
  const sort = params.get("sort") ?? (params.get("q") ? "relevance" : "newest");

  return (
    <section>
      <h1>Datasets</h1>
      <form role="search" onSubmit={search} className="row">
        <label className="grow">
          Search datasets
          <input type="search" value={words} onChange={(e) => setWords(e.target.value)} />
        </label>
        <button type="submit">Search</button>
      </form>
      <div className="row search-tools">
        <label>
          Sort by
          <select value={sort} onChange={(e) => change("sort", e.target.value)}>
            {ORDERS.map(([value, label]) => (
              <option key={value} value={value}>
                {label}
              </option>
            ))}
          </select>
        </label>
        {area && (
          <p className="chip" role="status">
            Only datasets in the map area{" "}
            <button type="button" className="link" onClick={() => change("bbox", null)}>
              Any area
            </button>
          </p>
        )}
        <button type="button" aria-expanded={picking} onClick={() => setPicking(!picking)}>
          {picking ? "Close the map" : "Search a map area"}
        </button>
        {narrow && (
          <button type="button" aria-expanded={showFilters} aria-controls="filters" onClick={() => setShowFilters(!showFilters)}>
            {showFilters ? "Hide filters" : "Filters"}
          </button>
        )}
      </div>
      {/* The map stays open after a search, to move and search again. */}
      {picking && (
        <Suspense fallback={<p className="loading">Loading the map…</p>}>
          <AreaPicker onPick={(bbox) => change("bbox", bbox)} />
        </Suspense>
      )}
      <div className="catalog">
        <div className="grow">
          <ErrorNote error={results.error} />
          {results.value && (
            <p role="status">
              {total === 0 ? "No dataset matches." : `${total} dataset${total === 1 ? "" : "s"}`}
            </p>
          )}
          <ul className="cards">
            {results.value?.results.map((d) => (
              <li key={d.id} className="card">
                <Thumbnail path={pictureOf(d)} raster={d.kind === "raster" ? d.id : undefined} bbox={d.extent_bbox} title={d.title} />
                <div>
                  <h2>
                    <Link href={`/datasets/${d.id}`}>{d.title}</Link>
                  </h2>
                  <p className="meta">
                    <span className="tag">{d.kind === "raster" ? "raster" : (d.geometry_type ?? "table")}</span>
                    <span className="tag">{d.visibility}</span>
                    {d.status !== "ready" && <span className="tag">{d.status}</span>}
                    {d.feature_count != null && <span>{d.feature_count.toLocaleString()} features</span>}
                    {d.created_by_username && <span>by {d.created_by_username}</span>}
                  </p>
                  {d.summary && <p className="summary">{d.summary}</p>}
                </div>
              </li>
            ))}
          </ul>
          {total > PAGE && (
            <nav aria-label="Pages" className="row">
              <button type="button" disabled={offset === 0} onClick={() => change("offset", String(Math.max(0, offset - PAGE)) || null)}>
                Previous
              </button>
              <span>
                {offset + 1}–{Math.min(offset + PAGE, total)} of {total}
              </span>
              <button type="button" disabled={offset + PAGE >= total} onClick={() => change("offset", String(offset + PAGE))}>
                Next
              </button>
            </nav>
          )}
        </div>
        {/* Beside the results on a wide screen; on a phone behind the Filters button above them. */}
        <aside aria-label="Filters" id="filters" hidden={narrow && !showFilters}>
          {FACETS.map(([name, label]) => {
            const counts = facets.value?.[name] ?? {};
            const chosen = params.get(name);
            const entries = Object.entries(counts);
            if (!entries.length && !chosen) return null;
            return (
              <fieldset key={name}>
                <legend>{label}</legend>
                {chosen && (
                  <button type="button" className="link" onClick={() => change(name, null)}>
                    Any {label.toLowerCase()}
                  </button>
                )}
                <ul>
                  {entries.map(([value, count]) => (
                    <li key={value}>
                      <button
                        type="button"
                        className="link"
                        aria-pressed={chosen === value}
                        onClick={() => change(name, chosen === value ? null : value)}
                      >
                        {value} ({count})
                      </button>
                    </li>
                  ))}
                </ul>
              </fieldset>
            );
          })}
        </aside>
      </div>
    </section>
  );
}
