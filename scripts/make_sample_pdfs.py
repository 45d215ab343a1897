"""Generate the two sample PDFs of the Orbitly demo corpus.

Writes into samples/orbitly/corpus/:
  - sales-brochure-2025.pdf  (3 pages; page 2 states the Pro price as $15, which deliberately
    conflicts with pricing.md's $12 so the demo can show the conflicting_sources flag)
  - enterprise-sla.pdf       (3 pages: uptime commitments, service credits, incident response)

Uses fpdf2 with the built-in Helvetica font only, so all text must be latin-1.
Run:  python scripts/make_sample_pdfs.py [output_dir]
"""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from fpdf import FPDF

DEFAULT_OUT = Path(__file__).resolve().parent.parent / "samples" / "orbitly" / "corpus"

# Each page: (heading, [blocks]). A block is ("p", text), ("bullets", [items]),
# ("line", text) for a single unwrapped line, ("h2", text) or
# ("table", [column_widths_mm, header_row, row, ...]).
Page = tuple[str, list[tuple[str, Any]]]

BROCHURE: list[Page] = [
    (
        "Orbitly 2025: Plan, track and ship together",
        [
            (
                "p",
                "Orbitly is the project-management app from Orbitly Labs. Teams use Orbitly "
                "to plan work, track every task and deliver projects on time - from a "
                "five-person startup to an organisation with thousands of users.",
            ),
            ("h2", "Everything your team needs in one place"),
            (
                "bullets",
                [
                    "Four views for every project: List, Board, Calendar and Timeline.",
                    "Timeline view with dependencies, milestones, baselines and critical path.",
                    "Recurring tasks, subtasks up to 3 levels deep and 12 built-in templates.",
                    "Mobile apps for iOS and Android.",
                    "A REST API with webhooks for your own automations.",
                ],
            ),
            ("h2", "Start in minutes"),
            (
                "p",
                "Sign up at app.orbitly.example and every new workspace gets a 14-day free "
                "trial of the Business plan. No credit card is required. Invite your team, "
                "pick a template and create your first project on day one.",
            ),
        ],
    ),
    (
        "Plans and Pricing",
        [
            (
                "p",
                "Orbitly has a plan for every team. All prices are in US dollars, per user per month, billed monthly.",
            ),
            ("line", "The Free plan costs $0 for up to 5 members."),
            ("line", "The Pro plan costs $15 per user per month."),
            ("line", "The Business plan costs $24 per user per month."),
            ("line", "Enterprise pricing is custom; contact our sales team for a quote."),
            (
                "table",
                [
                    (25, 30, 30, 85),
                    ["Plan", "Projects", "Storage", "Support"],
                    ["Free", "3", "2 GB", "Community forum"],
                    ["Pro", "50", "100 GB", "Email"],
                    ["Business", "Unlimited", "1 TB", "Email and live chat"],
                    ["Enterprise", "Unlimited", "Unlimited", "24/7 phone, success manager"],
                ],
            ),
            (
                "p",
                "Pro adds Timeline view, the GitHub and Google Calendar integrations, API "
                "access and guests. Business adds critical path, SAML single sign-on, "
                "enforced two-factor authentication and a 99.9% uptime SLA. Enterprise adds "
                "SCIM provisioning, EU or US data residency and a 99.95% uptime SLA.",
            ),
        ],
    ),
    (
        "Security, Integrations and Support",
        [
            ("h2", "Security you can show your auditors"),
            (
                "bullets",
                [
                    "SOC 2 Type II certified, audited every year.",
                    "AES-256 encryption at rest and TLS 1.2 or higher in transit.",
                    "SAML 2.0 single sign-on on Business and Enterprise plans.",
                    "Data residency in the EU (Frankfurt) or the US (Virginia) for Enterprise.",
                ],
            ),
            ("h2", "Works with the tools you already use"),
            (
                "p",
                "Post project updates to Slack and create tasks with the /orbitly slash "
                "command. Link GitHub pull requests to tasks and close them automatically "
                "on merge. Sync due dates both ways with Google Calendar every 15 minutes.",
            ),
            ("h2", "Talk to us"),
            (
                "p",
                "Our sales team is happy to set up a demo or an Enterprise trial. Email "
                "sales@orbitly.example. Existing customers can reach support at "
                "support@orbitly.example, Monday to Friday, 07:00 to 19:00 UTC.",
            ),
        ],
    ),
]

SLA: list[Page] = [
    (
        "Orbitly Enterprise Service Level Agreement",
        [
            (
                "p",
                "This Service Level Agreement (SLA) between Orbitly Labs and its customers "
                "applies to the Orbitly web app and the Orbitly REST API. It is effective "
                "from 1 January 2025 and is part of every Business and Enterprise "
                "subscription.",
            ),
            ("h2", "1. Uptime commitment"),
            ("line", "Enterprise plan: 99.95% monthly uptime."),
            ("line", "Business plan: 99.9% monthly uptime."),
            (
                "p",
                "The Free and Pro plans are provided without an uptime commitment and are "
                "not eligible for service credits.",
            ),
            ("h2", "2. How uptime is measured"),
            (
                "p",
                "Monthly uptime is the percentage of minutes in a calendar month in which "
                "the Orbitly web app and API are available, measured by Orbitly Labs "
                "every minute from at least three locations. A minute counts as unavailable "
                "when more than 5% of requests fail with a server error. Current and past "
                "availability is published at status.orbitly.example.",
            ),
            ("h2", "3. Exclusions"),
            (
                "p",
                "Uptime does not include scheduled maintenance, which is announced at "
                "least 72 hours in advance and is limited to 4 hours per month, normally "
                "on Sundays between 02:00 and 06:00 UTC. Outages caused by the customer, "
                "by third-party integrations or by events outside Orbitly Labs' "
                "reasonable control are also excluded.",
            ),
        ],
    ),
    (
        "Service Credits",
        [
            (
                "p",
                "If monthly uptime falls below the commitment for your plan, you receive a "
                "service credit, calculated as a percentage of that month's subscription "
                "fee, according to the table below.",
            ),
            (
                "table",
                [
                    (70, 70, 30),
                    ["Enterprise monthly uptime", "Business monthly uptime", "Service credit"],
                    ["Below 99.95% but at least 99.0%", "Below 99.9% but at least 99.0%", "10%"],
                    ["Below 99.0% but at least 95.0%", "Below 99.0% but at least 95.0%", "25%"],
                    ["Below 95.0%", "Below 95.0%", "50%"],
                ],
            ),
            ("h2", "Claiming a service credit"),
            (
                "p",
                "The account Owner must request the credit by emailing "
                "billing@orbitly.example within 15 days after the end of the affected "
                "month. Credits are applied to the next invoice and are not paid out in "
                "cash. The total credit for one month can never exceed 50% of that "
                "month's fee. Service credits are the only remedy for missing the uptime "
                "commitment.",
            ),
        ],
    ),
    (
        "Incident Response and Support",
        [
            (
                "p",
                "Customers report incidents by email to support@orbitly.example (write "
                "URGENT in the subject for Sev1 and Sev2) or, on the Enterprise plan, by "
                "calling the 24/7 support line. Orbitly Labs assigns a severity level and "
                "responds within the times below.",
            ),
            (
                "table",
                [
                    (20, 70, 40, 40),
                    ["Severity", "Meaning", "Enterprise", "Business"],
                    ["Sev1", "Orbitly is down or unusable", "1 hour, 24/7", "4 hours, 24/7"],
                    ["Sev2", "Major feature broken, no workaround", "4 hours, 24/7", "8 business hours"],
                    ["Sev3", "Problem with a workaround", "8 business hours", "1 business day"],
                    ["Sev4", "Question or feature request", "1 business day", "1 business day"],
                ],
            ),
            ("line", "Sev1 incidents are answered within 1 hour for Enterprise customers."),
            (
                "p",
                "During a Sev1 incident, Orbitly Labs posts updates on status.orbitly.example "
                "at least every 30 minutes until the incident is resolved. For every Sev1 "
                "incident, Enterprise customers receive a written root cause analysis "
                "within 5 business days. Business hours are Monday to Friday, 07:00 to "
                "19:00 UTC.",
            ),
        ],
    ),
]


class DocPDF(FPDF):
    def __init__(self, footer_text: str) -> None:
        super().__init__(format="A4")
        self.footer_text = footer_text
        self.set_auto_page_break(auto=True, margin=20)
        self.set_margins(20, 20, 20)

    def footer(self) -> None:
        self.set_y(-15)
        self.set_font("Helvetica", "", 8)
        self.set_text_color(120, 120, 120)
        self.cell(0, 10, f"{self.footer_text} - page {self.page_no()}", align="C")
        self.set_text_color(0, 0, 0)


def _check_latin1(text: str) -> str:
    text.encode("latin-1")  # raises if a character is outside latin-1
    return text


def render(pages: list[Page], title: str, footer: str, out_path: Path) -> None:
    pdf = DocPDF(footer)
    pdf.set_title(title)
    pdf.set_author("Orbitly Labs")
    # fixed date so that re-running the script produces byte-identical files
    pdf.set_creation_date(datetime(2025, 1, 1, tzinfo=UTC))
    for heading, blocks in pages:
        pdf.add_page()
        pdf.set_font("Helvetica", "B", 18)
        pdf.multi_cell(0, 10, _check_latin1(heading), new_x="LMARGIN", new_y="NEXT")
        pdf.ln(4)
        for kind, content in blocks:
            if kind == "p":
                pdf.set_font("Helvetica", "", 11)
                pdf.multi_cell(0, 6, _check_latin1(str(content)), new_x="LMARGIN", new_y="NEXT")
                pdf.ln(3)
            elif kind == "line":
                pdf.set_font("Helvetica", "B", 11)
                pdf.cell(0, 7, _check_latin1(str(content)), new_x="LMARGIN", new_y="NEXT")
            elif kind == "h2":
                pdf.ln(2)
                pdf.set_font("Helvetica", "B", 13)
                pdf.cell(0, 8, _check_latin1(str(content)), new_x="LMARGIN", new_y="NEXT")
                pdf.ln(1)
            elif kind == "bullets":
                pdf.set_font("Helvetica", "", 11)
                for item in content:
                    pdf.multi_cell(0, 6, _check_latin1("- " + item), new_x="LMARGIN", new_y="NEXT")
                pdf.ln(3)
            elif kind == "table":
                pdf.ln(3)
                pdf.set_font("Helvetica", "", 10)
                widths, *rows = content
                with pdf.table(col_widths=widths, line_height=6, text_align="LEFT") as table:
                    for row in rows:
                        r = table.row()
                        for cell in row:
                            r.cell(_check_latin1(cell))
                pdf.ln(4)
            else:
                raise ValueError(f"unknown block kind {kind!r}")
    out_path.parent.mkdir(parents=True, exist_ok=True)
    pdf.output(str(out_path))


def main(argv: list[str]) -> int:
    out_dir = Path(argv[1]) if len(argv) > 1 else DEFAULT_OUT
    render(
        BROCHURE,
        "Orbitly Sales Brochure 2025",
        "Orbitly Labs - Sales Brochure 2025",
        out_dir / "sales-brochure-2025.pdf",
    )
    render(
        SLA,
        "Orbitly Enterprise Service Level Agreement",
        "Orbitly Labs - Enterprise SLA",
        out_dir / "enterprise-sla.pdf",
    )
    print(f"wrote PDFs to {out_dir}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
