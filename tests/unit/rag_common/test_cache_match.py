"""Whether a kept question may answer a new one, the cosine aside: the same anchors and the same sense.

Each pair below is a pair of close words that MiniLM scores near or above the cache's threshold;
the opposite ones must never share an answer, whatever their case, and the rephrasings must.
"""

from __future__ import annotations

import pytest

from rag_common.store.cache_match import may_serve, sense

pytestmark = pytest.mark.unit

OPPOSITES = [
    # negation, however it is written
    ("Which plan includes SSO?", "Which plan does not include SSO?"),
    ("Which plans include single sign-on?", "Which plans don't include single sign-on?"),
    ("Which plans include single sign-on?", "Which plans come without single sign-on?"),
    ("Which plans have the GitHub integration?", "Which plans lack the GitHub integration?"),
    ("What is included in the Business plan?", "What is excluded from the Business plan?"),
    ("Which plans include 2FA?", "Which plans include everything except 2FA?"),
    ("Does Orbitly store passwords?", "Does Orbitly never store passwords?"),
    ("Which plans support SAML?", "Which plans have no SAML support?"),
    ("Which views are available on the Free plan?", "Which views are unavailable on the Free plan?"),
    ("Which plans allow guest users?", "Which plans disallow guest users?"),
    ("How do I enable two-factor authentication?", "How do I disable two-factor authentication?"),
    ("How do I turn on the sync agent?", "How do I turn off the sync agent?"),
    ("How do I archive a project?", "How do I unarchive a project?"),
    # comparatives and superlatives
    ("Which plan has the most storage?", "Which plan has the least storage?"),
    ("Which plan allows the most projects?", "Which plan allows the fewest projects?"),
    ("Which plan is the cheapest?", "Which plan is the most expensive?"),
    ("Which plan is cheaper than Business?", "Which plan is more expensive than Business?"),
    ("Is the Business plan more expensive than Pro?", "Is the Business plan less expensive than Pro?"),
    ("What is the maximum file size on the Free plan?", "What is the minimum file size on the Free plan?"),
    ("Which plans cost more than $12?", "Which plans cost less than $12?"),
    ("Which plans have a higher rate limit than Pro?", "Which plans have a lower rate limit than Pro?"),
    ("What is the oldest supported version?", "What is the newest supported version?"),
    ("What happens before the trial ends?", "What happens after the trial ends?"),
    ("What happens to projects above the Free limit?", "What happens to projects below the Free limit?"),
    ("What happens to workspaces over the storage limit?", "What happens to workspaces under the storage limit?"),
    ("Which plans include at least 100 GB?", "Which plans include at most 100 GB?"),
    # opposite poles of an axis both speak of
    ("Is the Pro plan expensive?", "Is the Pro plan cheap?"),
    ("How do I create a project?", "How do I delete a project?"),
    ("How do I import my data?", "How do I export my data?"),
    ("How do I upgrade my plan?", "How do I downgrade my plan?"),
    # regions, periods, plans, platforms and names in lower case
    ("Is data residency available in the eu?", "Is data residency available in the us?"),
    ("What are the support hours in the uk?", "What are the support hours in the us?"),
    ("Which data center serves apac customers?", "Which data center serves emea customers?"),
    ("Can I keep my data in europe?", "Can I keep my data in the us?"),
    ("How much does the Pro plan cost monthly?", "How much does the Pro plan cost annually?"),
    ("How much does the Pro plan cost per month?", "How much does the Pro plan cost per year?"),
    ("What is the monthly price of the Business plan?", "What is the yearly price of the Business plan?"),
    ("What is the daily export limit?", "What is the weekly export limit?"),
    ("Is the uptime SLA measured monthly?", "Is the uptime SLA measured quarterly?"),
    ("How many API requests can I make per second?", "How many API requests can I make per minute?"),
    ("how much does the pro plan cost", "how much does the business plan cost"),
    ("does business include scim", "does enterprise include scim"),
    ("what does the starter plan cost", "what does the premium plan cost"),
    ("what is the maximum file size on the free plan", "what is the maximum file size on paid plans"),
    ("how do i connect orbitly to the gitlab integration", "how do i connect orbitly to the jira integration"),
    ("Does the sync agent run on windows?", "Does the sync agent run on linux?"),
    ("What is the rate limit on staging?", "What is the rate limit on production?"),
    # quantifiers and number words
    ("Do all plans include SSO?", "Which plans include SSO?"),
    ("Can every member export data?", "Can only admins export data?"),
    ("How much does the Pro plan cost for ten users?", "How much does the Pro plan cost for twenty users?"),
]

REPHRASINGS = [
    ("How much does the Pro plan cost?", "What is the price of the Pro plan?"),
    ("How much does the Pro plan cost?", "how much does the pro plan cost"),
    ("How much does the Pro plan cost?", "Pro plan price?"),
    ("How much storage does the Business plan include?", "How much storage comes with the Business plan?"),
    ("Which plan does not include SSO?", "Which plans don't include SSO?"),
    ("Which plans lack the GitHub integration?", "Which plans do not have the GitHub integration?"),
    ("How do I enable two-factor authentication?", "How do I turn on two-factor authentication?"),
    ("How do I disable two-factor authentication?", "How do I turn off two-factor authentication?"),
    ("Which plan is the cheapest?", "Which plan is the least expensive?"),
    ("What is the largest file I can upload?", "What is the maximum file size I can upload?"),
    ("How much does the Pro plan cost per month?", "How much does the Pro plan cost monthly?"),
    ("What is the annual price of the Business plan?", "What is the price of the Business plan per year?"),
    ("Is data residency available in the EU?", "Is data residency available in europe?"),
    ("Do all plans include SSO?", "Is SSO included in every plan?"),
    ("How do I create a project?", "How do I create a new project?"),  # "new" is on no axis "create" has
    ("How long is the free trial?", "How many days does the free trial last?"),  # "last" here is a verb
    ("How do I contact us about billing?", "How can I contact us about billing?"),  # "us", the pronoun
]


@pytest.mark.parametrize(("kept", "asked"), OPPOSITES)
def test_questions_of_opposite_meaning_never_share_an_answer(kept: str, asked: str) -> None:
    assert not may_serve(kept, asked), (sense(kept), sense(asked))
    assert not may_serve(asked, kept)
    assert not may_serve(kept.lower(), asked.lower())  # case is no difference


@pytest.mark.parametrize(("kept", "asked"), REPHRASINGS)
def test_a_rephrasing_may_share_its_answer(kept: str, asked: str) -> None:
    assert may_serve(kept, asked), (sense(kept), sense(asked))
    assert may_serve(asked, kept)
