-- pandoc filter making shardkit-format(5) of manifests/FORMAT.md (see the
-- Makefile): a NAME and a SEE ALSO section around it, tables that fit the
-- page, and links a line can break.

-- Each table column at least as wide as its longest word; the rest of the
-- line shared in proportion to the text a column holds beyond that, so that
-- tbl(1) never makes a table wider than the page.  pandoc writes a relative
-- width w as lw(70w n), and tbl puts 3n between columns.
local LINE = 70
local GAP = 3

local function measure(cell)
  local text = pandoc.utils.stringify(cell.contents)
  local longest = 0
  for word in text:gmatch("%S+") do
    longest = math.max(longest, utf8.len(word) or #word)
  end
  return utf8.len(text) or #text, longest
end

function Table(t)
  local n = #t.colspecs
  local natural, minimum = {}, {}
  for i = 1, n do natural[i], minimum[i] = 1, 1 end
  local function visit(rows)
    for _, row in ipairs(rows) do
      for i, cell in ipairs(row.cells) do
        local length, longest = measure(cell)
        natural[i] = math.max(natural[i], length)
        minimum[i] = math.max(minimum[i], longest)
      end
    end
  end
  visit(t.head.rows)
  for _, body in ipairs(t.bodies) do visit(body.body) end
  local avail = LINE - GAP * (n - 1)
  local sum_natural, sum_minimum = 0, 0
  for i = 1, n do
    sum_natural = sum_natural + natural[i]
    sum_minimum = sum_minimum + minimum[i]
  end
  for i = 1, n do
    local width
    if sum_natural <= avail then
      width = natural[i]
    elseif sum_minimum >= avail then
      width = minimum[i] * avail / sum_minimum
    else
      width = minimum[i] + (avail - sum_minimum) * (natural[i] - minimum[i])
                           / (sum_natural - sum_minimum)
    end
    t.colspecs[i] = {t.colspecs[i][1], width / LINE}
  end
  return t
end

-- A link within the document is its text; another shows its URL, which a
-- line may break after any '/'.
function Link(link)
  if link.target:match("^#") then return link.content end
  local out = link.content:clone()
  out:insert(pandoc.Space())
  out:insert(pandoc.RawInline("man", "(" .. link.target:gsub("/", "/\\:") .. ")"))
  return out
end

function Pandoc(doc)
  local head = pandoc.read([[
# NAME

shardkit-format - the shardkit dataset format: shards, index.jsonl, manifest.json
]], "gfm").blocks
  local tail = pandoc.read([[
# SEE ALSO

**shardify**(1), **shardcheck**(1), **shardcat**(1), the JSON Schemas
`manifest.schema.json` and `index-line.schema.json` beside FORMAT.md in the sources.
]], "gfm").blocks
  local blocks = pandoc.List(head)
  blocks:extend(doc.blocks)
  blocks:extend(tail)
  -- No justification or hyphenation (narrow table cells cannot be justified),
  -- and in continuous rendering (man's, cR) one long page: groff 1.22.4's tbl
  -- warns about a table text block that exactly fills what is left of a page.
  doc.meta["header-includes"] = pandoc.MetaBlocks({pandoc.RawBlock("man",
    ".ad l\n.nh\n.if \\n[cR] .pl 100000v")})
  return pandoc.Pandoc(blocks, doc.meta)
end
